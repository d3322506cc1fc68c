"""Reproductions of the thesis and the papers: ``thesis_chapter3`` (Snelson, M sweeps),
``linearized_papers`` (EGP/UGP and EKS/UKS set-ups) and ``reproduce`` (their tables, with flags
against each paper's numbers)."""
