"""braze's command-line tools: `braze-opt` and `braze import` (`braze.tools.import_model`)."""
