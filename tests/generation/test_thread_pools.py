"""OpenMP's wait policy: PASSIVE unless the environment already chooses one."""

from rag.models import quiet_thread_pools


def test_passive_unless_chosen():
    assert quiet_thread_pools({"PATH": "/bin"}) == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}
    assert quiet_thread_pools({"OMP_WAIT_POLICY": "ACTIVE"}) == {"OMP_WAIT_POLICY": "ACTIVE"}
