"""The confidence gate's model: `cairn.hot.gates` holds it (recall imports one module for the gates), and this module
keeps its names for the code that imports them from here."""

from cairn.hot.gates import COEFFICIENTS, FEATURES, FITTED_MIN_CONFIDENCE, INTERCEPT, features, probability

__all__ = ["COEFFICIENTS", "FEATURES", "FITTED_MIN_CONFIDENCE", "INTERCEPT", "features", "probability"]
