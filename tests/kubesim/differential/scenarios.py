"""The scenarios: which recordings are replayed, on what state, normalised how.

Recordings not listed here cannot be replayed by sending requests alone: they drive the
server itself (etcd compaction in 03, watch-cache eviction and restarts in 08a-08e), show
timing (05d, 09g: bookmarks), start from state the recording does not show (04b-04d, 04g:
an RV taken outside the recording; 09b, 10b, 10c, 16a-16f: the pods in tx01 or tx10 at
that moment), come in an order neither side promises together with content that depends
on it (24f: only the first of the unordered RV=0 Tables has column definitions), or are
cut down (15b, 15e: discovery documents with some groups or resources only). The
per-area tests in tests/kubesim check what they show.
"""

from __future__ import annotations

from tests.kubesim.differential.scenario import (
    LIST_BEFORE_WATCH,
    Create,
    ItemsOf,
    Mask,
    Namespace,
    Prep,
    Scenario,
    SetupOf,
    allocated_ips,
    rv_in_message,
)
from tests.kubesim.differential.settings import Need
from tests.kubesim.replay import described_depth, duplicated, nested, recorded_podset_crd
from tests.support import transcript

PODSETS = "/apis/example.aioinformer.dev/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#: The PodSet CRD the second batch's server had (installed by another job).
PODSET_CRD = Create(CRDS, recorded_podset_crd())
#: RecPodSet (23c's setup): the namespaces of 24a/25* used it.
RECPODSET_CRD = SetupOf("23c", labels=("create CRD",))
#: The PodSet 22b applied in rec-ssa-a (23c asks for subresources it does not have).
SSA_PODSET = Create(
    f"{PODSETS}/namespaces/rec-ssa-a/podsets",
    {
        "apiVersion": "example.aioinformer.dev/v1",
        "kind": "PodSet",
        "metadata": {"name": "ssa-ps"},
        "spec": {"replicas": 1},
    },
)
#: A Table's age cells ("0s", "3m17s"): how long ago the run made the object.
AGE = Mask("rows.*.cells.*", "an age is the run's timing", pattern=r"^(\d+[smhdy])+$")
TX01 = "/api/v1/namespaces/tx01/pods"
#: tx01, where the first batch's requests went: it existed when they were recorded (a
#: request into a namespace that does not exist may be answered 404 before anything else).
IN_TX01 = (Namespace("tx01"),)
TX01_PODS = (*IN_TX01, ItemsOf("01", TX01))

# What the recording servers had that answers depend on (a cluster that differs skips).
NO_CONTROLLERS = Need(
    "controllers",
    False,
    "the recording server ran no kube-controller-manager or scheduler (no namespace "
    "controller, garbage collector or workload controllers); a cluster's would change the answers",
)
NO_SA_ADMISSION = Need(
    "service_account_admission",
    False,
    "the recording server ran with the ServiceAccount admission plugin off; with it, every "
    "pod gets a serviceAccountName and a token volume",
)
WATCHLIST_GATE_ON = Need(
    "watch_list",
    True,
    "the recording server had the WatchList feature gate on (1.28: off by default)",
)
WATCHLIST_GATE_OFF = Need(
    "watch_list", False, "the recording server had the WatchList feature gate off (on from 1.32)"
)
#: Pods made as recorded: without a service account, bound by no scheduler, run by no
#: kubelet, never collected.
PODS = (NO_CONTROLLERS, NO_SA_ADMISSION)


def pods_before_watch(recording: str, namespace: str) -> tuple[Prep, ...]:
    """Namespace ``namespace`` with the pods the recording listed before its watch."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    return (Namespace(namespace), ItemsOf(recording, pods, LIST_BEFORE_WATCH))


def listed_podsets(recording: str) -> tuple[Prep, ...]:
    """The namespaces and PodSets a recorded PodSet list showed."""
    items = transcript(recording)["response"]["body"]["items"]
    namespaces = sorted({item["metadata"]["namespace"] for item in items})
    return (
        *(Namespace(ns) for ns in namespaces),
        *(
            ItemsOf(recording, f"{PODSETS}/namespaces/{ns}/podsets", namespace=ns, status=True)
            for ns in namespaces
        ),
    )


#: A fact of how the server's binary was built (when, from which tree, by which Go): only
#: its form is compared.
BUILD_FACT = "each build's own"
SHARED_SERVER_STATE = "lists objects another recording's run left on the shared server"
DEEP_STRING = "<the same 20000-level JSON text, 120001 chars, returned unchanged: True>"
POLL = "a poll of the recorder: how often it ran is the server's timing"

SCENARIOS: list[Scenario] = [
    # -- lists and their errors -----------------------------------------------------------
    Scenario("01", prepare=TX01_PODS, needs=PODS),
    Scenario(
        "02",
        prepare=(
            Namespace("tx02"),
            ItemsOf("02", "/api/v1/namespaces/tx02/pods"),
            ItemsOf("02", "/api/v1/namespaces/tx02/pods", exchange="page 2"),
            ItemsOf("02", "/api/v1/namespaces/tx02/pods", exchange="page 3"),
        ),
        masks=(Mask("metadata.continue", "a continue token holds its server's revision"),),
        needs=PODS,
    ),
    Scenario("04a", prepare=(Namespace("tx01"), ItemsOf("04a", TX01)), needs=PODS),
    Scenario("04e", prepare=TX01_PODS, needs=PODS),
    Scenario("04f", prepare=IN_TX01),
    Scenario("05a", prepare=IN_TX01, masks=(rv_in_message(),)),
    Scenario("05b", prepare=IN_TX01, masks=(rv_in_message(),)),
    Scenario("05c", prepare=IN_TX01, masks=(rv_in_message(),)),
    Scenario("08f", prepare=IN_TX01),
    Scenario("09d", prepare=IN_TX01, needs=(WATCHLIST_GATE_ON,)),
    Scenario("09e", prepare=IN_TX01, needs=(WATCHLIST_GATE_OFF,)),
    Scenario("09f", prepare=IN_TX01, needs=(WATCHLIST_GATE_OFF,)),
    Scenario("10d", prepare=(Namespace("tx10"),)),
    # -- watches during writes ------------------------------------------------------------
    Scenario(
        "06",
        prepare=(Namespace("tx06-other"), *pods_before_watch("06", "tx06")),
        needs=PODS,
    ),
    Scenario(
        "10a",
        prepare=pods_before_watch("10a", "tx10"),
        needs=PODS,
    ),
    Scenario(
        "12",
        prepare=pods_before_watch("12", "tx12"),
        masks=(Mask("message", "the stored RV is the server's", pattern=r"(?<=in record \()\d+"),),
        needs=PODS,
    ),
    *(
        Scenario(
            rec,
            prepare=(Namespace("tx01"), ItemsOf(rec, TX01, first=initial)),
            unordered_initial=initial,
            needs=PODS if rec < "07c" else (*PODS, WATCHLIST_GATE_ON),
        )
        for rec, initial in (("07a", 3), ("07b", 4), ("07c", 5), ("07d", 6), ("09a", 7), ("09c", 7))
    ),
    # -- error Status bodies --------------------------------------------------------------
    Scenario("11a", prepare=TX01_PODS, needs=PODS),
    Scenario("11b", prepare=TX01_PODS, needs=PODS),
    Scenario("11c", prepare=IN_TX01),
    Scenario("11d", prepare=IN_TX01),
    Scenario("11e", prepare=IN_TX01, needs=PODS),
    Scenario("11f", prepare=IN_TX01),
    Scenario("11g", prepare=IN_TX01),
    Scenario("11h", prepare=IN_TX01),
    Scenario("11i"),
    Scenario("11j", prepare=IN_TX01),
    Scenario("11k", prepare=TX01_PODS, needs=PODS),
    Scenario("11l", prepare=IN_TX01),
    Scenario("11m"),
    Scenario("11n", prepare=(Namespace("tx11n"),), needs=(NO_CONTROLLERS,)),
    # -- CRDs, Leases, discovery ----------------------------------------------------------
    Scenario("13a"),
    Scenario(
        "13b",
        prepare=(
            PODSET_CRD,
            Namespace("tx13"),
            ItemsOf("13b", "/apis/example.aioinformer.dev/v1/namespaces/tx13/podsets"),
        ),
    ),
    Scenario("13d", prepare=(PODSET_CRD,)),
    Scenario(
        "13c",
        prepare=(PODSET_CRD, *listed_podsets("13c")),
        masks=(Mask("items.*.metadata.generation", "the PodSets' spec writes before the list"),),
    ),
    Scenario("14", prepare=(Namespace("tx14"),)),
    Scenario(
        "15a", masks=(Mask("serverAddressByClientCIDRs.*.serverAddress", "each server's own"),)
    ),
    Scenario(
        "15d",
        masks=(
            Mask("buildDate", BUILD_FACT, pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"),
            Mask("gitCommit", BUILD_FACT, pattern=r"^[0-9a-f]{40}$"),
            Mask("gitTreeState", BUILD_FACT, pattern=r"^(clean|dirty|archive)?$"),
            Mask("goVersion", BUILD_FACT, pattern=r"^go1\.\d+(\.\d+)?$"),
        ),
    ),
    Scenario("15c"),
    Scenario("16g", prepare=IN_TX01),
    # -- tables ---------------------------------------------------------------------------
    Scenario("24a", prepare=(PODSET_CRD, RECPODSET_CRD), masks=(AGE,), needs=PODS),
    Scenario("24b", prepare=(PODSET_CRD, RECPODSET_CRD, SetupOf("24a")), masks=(AGE,), needs=PODS),
    Scenario("24c", prepare=(PODSET_CRD, RECPODSET_CRD, SetupOf("24a")), masks=(AGE,), needs=PODS),
    Scenario("24d", prepare=(PODSET_CRD, RECPODSET_CRD, SetupOf("24a")), masks=(AGE,), needs=PODS),
    Scenario(
        "24e",
        prepare=(PODSET_CRD, RECPODSET_CRD, SetupOf("24a")),
        leave_out={"LIST podsets": SHARED_SERVER_STATE},
        masks=(AGE,),
        needs=PODS,
    ),
    # -- events, OpenAPI, protobuf --------------------------------------------------------
    Scenario(
        "26a",
        prepare=(SetupOf("18a", labels=("create namespace",)),),
        needs=PODS,
    ),
    Scenario("27a"),
    Scenario(
        "28a",
        prepare=(PODSET_CRD, RECPODSET_CRD, SetupOf("24a")),
        needs=PODS,
    ),
    # -- dry run, deletion, finalizers, namespaces ----------------------------------------
    Scenario("17a", needs=PODS),
    Scenario(
        "17b",
        prepare=(SetupOf("17a"),),
        needs=PODS,
    ),
    Scenario("18a", prepare=(PODSET_CRD,), masks=allocated_ips(), needs=PODS),
    Scenario("18b", prepare=(PODSET_CRD, SetupOf("18a")), needs=PODS),
    Scenario(
        "18c", prepare=(SetupOf("18a", labels=("create namespace",)),), needs=(NO_CONTROLLERS,)
    ),
    Scenario("19a", needs=PODS),
    Scenario("20a", needs=(NO_CONTROLLERS,)),
    Scenario(
        "20b",
        prepare=(SetupOf("20a", labels=("create namespace",)),),
        needs=PODS,
    ),
    Scenario("21a", prepare=(PODSET_CRD,), needs=(NO_CONTROLLERS,)),
    # -- server-side apply ----------------------------------------------------------------
    Scenario("22a"),
    Scenario("22b", prepare=(PODSET_CRD, SetupOf("22a"))),
    Scenario("22c", prepare=(SetupOf("22a"),)),
    Scenario("22d", prepare=(SetupOf("22a"),), needs=(NO_CONTROLLERS,)),
    # -- scale ----------------------------------------------------------------------------
    Scenario("23a", needs=(NO_CONTROLLERS,)),
    Scenario(
        "23b", prepare=(SetupOf("23a", labels=("create namespace",)),), needs=(NO_CONTROLLERS,)
    ),
    Scenario(
        "23c",
        prepare=(
            PODSET_CRD,
            SetupOf("23a", labels=("create namespace",)),
            SetupOf("22a", labels=("create namespace",)),
            SSA_PODSET,
        ),
        leave_out={"poll": POLL},
    ),
    # -- bad bodies -----------------------------------------------------------------------
    Scenario("25a"),
    Scenario(
        "25b",
        prepare=(SetupOf("25a"), RECPODSET_CRD),
        bodies={"duplicate field": duplicated},
        yaml_bodies=True,
    ),
    Scenario("25c", prepare=(SetupOf("25a"), RECPODSET_CRD)),
    Scenario(
        "25d",
        prepare=(SetupOf("25a"), RECPODSET_CRD),
        bodies={"": described_depth},
        masks=(
            Mask(
                "metadata.annotations.nested",
                "the recording describes the 20000-level string it got back",
                rewrite=lambda v: DEEP_STRING if v == nested(20000) else v,
                exchange="main",
            ),
        ),
    ),
    Scenario("25e", prepare=(SetupOf("25a"),), yaml_bodies=True),
    # -- health ---------------------------------------------------------------------------
    Scenario("29a"),
]
