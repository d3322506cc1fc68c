"""The table of linearised methods (EGP/UGP paper; EKS/UKS paper): one row per method, read by
the lab's back end, the reproductions and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """One row of the method table: display label, model family ("gp": LinearizedGP, "ks":
    LinearizedKitchenSinks) and linearisation ("taylor" or "unscented")."""

    label: str
    family: str
    linearization: str


#: the four methods, in display order
METHODS = {"egp": Method("EGP", "gp", "taylor"), "ugp": Method("UGP", "gp", "unscented"),
           "eks": Method("EKS", "ks", "taylor"), "uks": Method("UKS", "ks", "unscented")}
