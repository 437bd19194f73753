"""pelab's lab: the experiments' plan, the runs' tidy tables, statistics,
tables, figures and the report (lab/Snakefile drives them)."""
