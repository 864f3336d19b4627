"""braze's command-line tools, the product's CLIs: `braze-opt` (`braze_opt`), and the `braze`
subcommands `import` (`import_model`), `compile` (`compile_model`), `bench` and `tune`; plus
`timing`, the one timer they and bench/ share. Scripts for GPU checks and experiments live in
bench/."""
