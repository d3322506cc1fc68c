"""A log likelihood typed as text (gpexplorer/likelihoods/pointwise_expression.py): written-out
Poisson, logistic and Gaussian densities equal the registered likelihoods (values, slopes, the
quadrature ELBO and its gradients, predictive moments); the normalisation check; refusals."""

import numpy as np
import pytest

from gpexplorer import kernels
from gpexplorer.likelihoods import BernoulliLogit, Gaussian, Poisson, get_likelihood
from gpexplorer.likelihoods.expressions import parse_expression
from gpexplorer.likelihoods.pointwise_expression import ExpressionLikelihood
from gpexplorer.variational import SparseVariationalGP

WRITTEN = {
    "poisson": ("y*f - exp(f) - gammaln(y + 1)", Poisson, lambda rng, n: rng.poisson(2.0, n).astype(float)),
    "logit": ("log_sigmoid((2*y - 1)*f)", BernoulliLogit, lambda rng, n: (rng.uniform(size=n) < 0.4).astype(float)),
    "gaussian": ("-0.5*(y - f)^2 - 0.5*log(2*pi)", lambda: Gaussian(variance=1.0),
                 lambda rng, n: rng.normal(size=n)),
}


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_a_written_out_likelihood_equals_the_registered_one(name):
    text, registered, draw = WRITTEN[name]
    typed, ref = ExpressionLikelihood(text), registered()
    rng = np.random.default_rng(0)
    Y = draw(rng, 12)
    F = rng.normal(scale=1.5, size=(4, 12, 1))
    np.testing.assert_allclose(typed.log_density(F, Y), ref.log_density(F, Y), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(typed.dlog_density_df(F, Y), ref.dlog_density_df(F, Y), rtol=1e-7, atol=1e-8)
    mean, var = typed.conditional_mean(F), typed.conditional_variance(F)
    np.testing.assert_allclose(mean, ref.conditional_mean(F), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(var, ref.conditional_variance(F), rtol=1e-3, atol=1e-5)
    _, mass = typed.normalisation()
    np.testing.assert_allclose(mass, 1.0, atol=1e-6)


@pytest.mark.parametrize("name", ["poisson", "logit"])
def test_the_typed_model_fits_like_the_registered_one(name):
    text, registered, draw = WRITTEN[name]
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (40, 1))
    Y = draw(rng, 40)
    models = [SparseVariationalGP(X, Y, kernels.SquaredExponential(), 6, lik, posterior="fg")
              for lik in (get_likelihood("expression", text=text), registered())]
    free = rng.normal(scale=0.3, size=models[0].posterior.num_free)
    values, grads = [], []
    for m in models:
        m.set_parameters(posterior=free)
        v, g = m.elbo(eval_gradient=True)
        values.append(v)
        grads.append(g)
    assert values[0] == pytest.approx(values[1], rel=1e-10)
    for n in grads[1]:
        np.testing.assert_allclose(grads[0][n], grads[1][n], rtol=1e-6, atol=1e-7)
    for m in models:
        m.fit(max_iter=2, method="block-lbfgs", evals_per_block=5)
    assert models[0].elbo() == pytest.approx(models[1].elbo(), rel=1e-4)
    np.testing.assert_allclose(models[0].predict_y(X[:5])[0], models[1].predict_y(X[:5])[0], rtol=1e-3)


def test_an_unnormalised_density_is_reported_not_refused():
    lik = ExpressionLikelihood("y*f - exp(f)")  # Poisson without log y!
    lik.validate(np.array([0.0, 3.0, 7.0]))
    f, mass = lik.normalisation()
    assert np.max(np.abs(mass - 1.0)) > 1.0 and f.size == mass.size


def test_refusals_are_clear():
    with pytest.raises(ValueError, match="does not depend on f"):
        ExpressionLikelihood("-y^2")
    with pytest.raises(ValueError, match="not allowed"):
        ExpressionLikelihood("__import__('os').system('true')")
    with pytest.raises(ValueError, match="unknown name 'z'.*variables are f and y"):
        ExpressionLikelihood("z*f")
    with pytest.raises(ValueError, match="not finite at f = 0 for y = 0"):
        ExpressionLikelihood("y*f - log(y)").validate(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="no sampler"):
        lik = ExpressionLikelihood()
        lik.validate(np.array([1.0, 2.0]))
        lik.sample(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="has not seen observations"):
        ExpressionLikelihood().conditional_mean(np.zeros((2, 1)))


def test_the_parser_with_two_variables_keeps_the_one_variable_form():
    e = parse_expression("y*f + gammaln(y + 1) + log1p(f^2)", variables=("f", "y"))
    assert e.variables == {"f", "y"}
    np.testing.assert_allclose(e.evaluate_with(f=np.array([0.5, 1.0]), y=np.array([2.0, 3.0])),
                               [1.0 + np.log(2.0) + np.log1p(0.25), 3.0 + np.log(6.0) + np.log1p(1.0)])
    g = parse_expression("sin(f)")
    np.testing.assert_allclose(g(np.array([0.0, np.pi / 2])), [0.0, 1.0], atol=1e-15)
    with pytest.raises(ValueError, match="only variable is f"):
        parse_expression("y*f")
    with pytest.raises(ValueError, match="needs values"):
        e.evaluate_with(f=1.0)
