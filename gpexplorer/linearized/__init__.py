"""Linearised inference for y = g(f) + noise: EGP/UGP (``gp``: Steinberg & Bonilla 2014) and
EKS/UKS (``kitchen_sinks``: Bonilla, Steinberg & Reid 2016), with their Taylor or statistical
linearisation (``linearization``), Gauss-Newton inner loop (``gauss_newton``), fixed point
(``fixed_point``), hyperparameter learning (``learning``, ``kitchen_sinks_learning``) and
free-energy profiles (``free_energy_profile``). The model classes are re-exported by
:mod:`gpexplorer.models`."""
