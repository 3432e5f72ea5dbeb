"""The differential harness: recorded kube-apiserver v1.28 exchanges sent again, to KubeSim
and (when ``AIOINFORMER_TEST_KUBECONFIG`` names one) to a real cluster, and the answers
compared with the recordings.

How it fits together, for the next engineer:

* ``tests/kubesim/conformance/*.json`` are the recordings (their README describes the shape).
  ``scenarios.py`` lists which are replayed, as data: a :class:`~.scenario.Scenario`
  names a recording, the state it needs first (``prepare``: namespaces, another
  recording's setup, the items a recorded list showed, any object; all made through the
  HTTP API, so the same preparation runs on a real cluster), the exchanges it leaves out
  and why, and the masks it needs beyond :func:`tests.kubesim.replay.masked` (a field
  path and a reason each: a generated name's suffix, an IP, an RV inside a message; never
  a whole body).
* ``runner.py`` replays a scenario: the setup exchanges (expected to succeed), the list
  before the watch, the main exchange (a watch is opened, its writes are sent while it is
  open, and its events other than bookmarks are compared), then ``more_exchanges``. The
  :class:`~tests.kubesim.replay.Replayer` sends string bodies (YAML, apply patches) byte
  for byte and maps the recorded uids, resourceVersions and continue tokens to the
  server's. Each answer's status, ``Warning`` headers and normalised body must be the
  recorded ones; a mismatch fails with the scenario, the exchange's label and a diff.
* ``targets.py`` and ``conftest.py``: the ``target`` fixture runs every scenario on a
  fresh KubeSim (no controllers, the recording's WatchList gate; 127.0.0.1) and on the
  cluster ``$AIOINFORMER_TEST_KUBECONFIG`` names (kubeconfig read by kubernetes_asyncio's
  loader: server, CA or client certificate, token). On a cluster, a scenario that needs
  another user's credentials, or settings of the recording's server (``needs``: no
  controllers, the ServiceAccount admission plugin off, a WatchList gate setting) that
  ``settings.py`` finds the cluster does not have, is skipped with that reason.
  Credentials never appear in a failure message (:meth:`~.targets.Target.redact`).
* ``cleanup.py``: a cluster is left as each scenario found it, so scenarios run in any
  order, on a bare kube-apiserver + etcd (no namespace controller: the harness empties
  and finalizes the namespaces itself) or a full cluster; what a scenario leaves behind
  fails it. Each scenario prepares the namespaces its requests go to (a test checks it).
* Where KubeSim answers differently from the recording, fix KubeSim; if that is not small,
  set ``kubesim_differs`` to what differs: the scenario is then a strict expected failure
  on KubeSim (fixing KubeSim turns it into an error until the mark goes).

Point it at a cluster: ``AIOINFORMER_TEST_KUBECONFIG=~/kind.kubeconfig pytest
tests/kubesim/differential -rs`` (a disposable cluster or a bare kube-apiserver v1.28.0 +
etcd: the scenarios create and delete namespaces such as ``rec-ssa-a``, two CRDs and a
Node).
"""
