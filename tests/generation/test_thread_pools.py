"""OpenMP's wait: a short spin, then sleep, unless the environment already chooses."""

from rag.models import quiet_thread_pools


def test_short_spin_then_sleep_unless_chosen():
    assert quiet_thread_pools({"PATH": "/bin"}) == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "3000"}
    assert quiet_thread_pools({"OMP_WAIT_POLICY": "ACTIVE"}) == {"OMP_WAIT_POLICY": "ACTIVE"}
    assert quiet_thread_pools({"GOMP_SPINCOUNT": "0"}) == {"GOMP_SPINCOUNT": "0"}
