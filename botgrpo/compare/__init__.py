"""Study statistics: steps to a threshold, area under the curve, the exact sign-flip test, Holm, bootstrap intervals."""
