// access-check: connect to every member of an inventory the way multicluster-runtime's
// ClusterProfile provider does, with sigs.k8s.io/cluster-inventory-api's pkg/access.
//
// It lists the ClusterProfiles of one hub namespace, builds each member's rest.Config with
// access.Config.BuildConfigFromCP (the provider file names the exec plugin), and lists
// Namespaces on the member through that config, so client-go runs the exec plugin, and asks
// the member who it is (SelfSubjectReview). One JSON result per profile goes to stdout; the
// exit code is 0 even when a member fails (the result says why), 2 for bad usage or an
// unreadable hub.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	versioned "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
)

type result struct {
	Profile      string          `json:"profile"`
	MemberID     string          `json:"memberID,omitempty"`
	Server       string          `json:"server,omitempty"`
	ExecCommand  string          `json:"execCommand,omitempty"`
	ExecConfig   json.RawMessage `json:"execConfig,omitempty"`
	KubeSystemID string          `json:"kubeSystemUID,omitempty"`
	User         string          `json:"user,omitempty"`
	Namespaces   int             `json:"namespaces"`
	Error        string          `json:"error,omitempty"`
}

func check(ctx context.Context, cfg *access.Config, cp *v1alpha1.ClusterProfile) result {
	r := result{Profile: cp.Name, MemberID: cp.Labels["multicluster.x-k8s.io/inventory-member-id"]}
	rc, err := cfg.BuildConfigFromCP(cp)
	if err != nil {
		r.Error = "BuildConfigFromCP: " + err.Error()
		return r
	}
	r.Server = rc.Host
	if rc.ExecProvider != nil {
		r.ExecCommand = rc.ExecProvider.Command
		if rc.ExecProvider.Config != nil {
			if raw, err := json.Marshal(rc.ExecProvider.Config); err == nil {
				r.ExecConfig = raw
			}
		}
	}
	rc.Timeout = 30 * time.Second
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		r.Error = "client: " + err.Error()
		return r
	}
	listed, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		r.Error = "list namespaces: " + err.Error()
		return r
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(
		ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		r.Error = "self subject review: " + err.Error()
		return r
	}
	r.User = review.Status.UserInfo.Username
	r.Namespaces = len(listed.Items)
	for _, ns := range listed.Items {
		if ns.Name == "kube-system" {
			r.KubeSystemID = string(ns.UID)
		}
	}
	return r
}

func main() {
	providerFile := access.SetupProviderFileFlag()
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the hub")
	namespace := flag.String("namespace", "", "inventory namespace on the hub")
	flag.Parse()
	if *kubeconfig == "" || *namespace == "" {
		fmt.Fprintln(os.Stderr, "usage: access-check -kubeconfig HUB -namespace NS -clusterprofile-provider-file F")
		os.Exit(2)
	}
	cfg, err := access.NewFromFile(*providerFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	hubConfig, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hub kubeconfig:", err)
		os.Exit(2)
	}
	hub, err := versioned.NewForConfig(hubConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hub client:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	profiles, err := hub.ApisV1alpha1().ClusterProfiles(*namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "list ClusterProfiles:", err)
		os.Exit(2)
	}
	out := []result{}
	for i := range profiles.Items {
		out = append(out, check(ctx, cfg, &profiles.Items[i]))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
