"""A package, so that ``scope="package"`` in this directory's conftest means this directory.

pytest scopes a package fixture to the nearest Python package; in a plain directory it falls
back to the session. Without this file the join hub (a control plane with
kube-controller-manager) and the cluster manager on it, its ``loop lag`` sampler included,
ran from the first join test to the end of the whole suite, on the shared event loop.
"""
