"""The damping law of resolved rate's damped least squares (control.resolved_rate), on its own:
the NumPy path calls it and the compiled kernels (control/kernels/resolved_rate.py) compile it,
so both take it from here, below them both."""

from __future__ import annotations


def damping_lambda2(sigma_min: float, sigma_0: float, lambda_max: float) -> float:
    """lambda^2 = lambda_max^2 (1 - (sigma_min / sigma_0)^2) below sigma_0, else 0.

    sigma_min: the smallest singular value of the commanded task rows (m/s or rad/s per rad/s of
    the joints); sigma_0 where damping starts; lambda_max the damping at sigma = 0 (same units).
    A plain function of floats on purpose: numba compiles this same function.
    """
    if sigma_min >= sigma_0:
        return 0.0
    return lambda_max**2 * (1.0 - (sigma_min / sigma_0) ** 2)
