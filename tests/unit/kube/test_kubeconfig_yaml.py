import string

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster_inventory import _yaml as _kubeconfig_yaml

texts = st.text(
    alphabet=string.ascii_letters + string.digits + "-_./:=+ @'\"#\\", min_size=0, max_size=40
)
keys = st.text(alphabet=string.ascii_lowercase + "-", min_size=1, max_size=12)
leaf = st.one_of(texts, st.booleans(), st.none())
docs = st.recursive(
    leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=20,
)


def test_kubectl_style_kubeconfig():
    text = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0
    server: https://127.0.0.1:6443
    extensions:
    - name: client.authentication.k8s.io/exec
      extension:
        clusterName: c1
  name: hub
contexts:
- context:
    cluster: hub
    namespace: team-a
    user: admin
  name: hub
current-context: hub
kind: Config
preferences: {}
users:
- name: admin
  user:
    token: "abc\\"def"
    exec:
      args:
      - --flag
      - 'quoted value'
      provideClusterInfo: true
"""
    assert _kubeconfig_yaml.load_block(text) == yaml.safe_load(text)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, docs, min_size=1, max_size=5))
def test_same_answer_as_pyyaml_or_unsupported(doc):
    for style in (False, None):
        text = yaml.safe_dump(doc, default_flow_style=style, width=10_000)
        try:
            ours = _kubeconfig_yaml.load_block(text)
        except _kubeconfig_yaml.Unsupported:
            continue
        assert ours == yaml.safe_load(text), text


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",
        "a: |\n  block\n",
        "a: {b: c}\n",
        "a: [1, 2]\n",
        "a: 12\n",
        "a:\tb\n",
        "a: yes\n",
        "a: b\n   c\n",
    ],
)
def test_outside_the_subset_is_unsupported(text):
    with pytest.raises(_kubeconfig_yaml.Unsupported):
        _kubeconfig_yaml.load_block(text)
