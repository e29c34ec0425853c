"""Every registered provisioner passes the same checks (reclaim.testing.provisioners)."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim import registry
from reclaim.testing.provisioners import check_provisioner


@pytest.mark.parametrize("name", registry.names("provisioner"))
def test_registered_provisioner_conforms(name):
    params = {"max_iter": 30} if name == "corp" else {}
    check_provisioner(name, lambda: registry.build("provisioner", name, **params))


class LendsEverything(registry.factory("provisioner", "rccr")):
    """Lends the whole request, history or not."""

    def lendable(self, history, request, horizon):
        return np.asarray(request, np.float64).copy()


def test_the_suite_catches_lending_without_history():
    with pytest.raises(AssertionError, match="without history"):
        check_provisioner("greedy", LendsEverything)
