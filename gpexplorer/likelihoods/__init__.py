"""Forward models y = g(f) + noise with their Jacobians (``forward_models``) and the whitelisted
parser of user-typed expressions (``expressions``)."""
