"""Statistics of timing samples: three-valued comparisons and jobs in progress at once."""
