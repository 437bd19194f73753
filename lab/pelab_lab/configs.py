"""The workflow's config from its files, merged in order (lab/config.yaml,
then lab/quick.yaml under --quick, then each --config-file): a mapping
merges into a mapping key by key, anything else replaces what was there —
so a file may give a per-task mapping where the base config has one number
(`steps: {copy: 5000}` over `steps: 2000`), which Snakemake's own merge of
several --configfile files cannot do. lab/run writes the result into the run
folder and hands Snakemake that one file.

  python3 -m pelab_lab.configs FILE... > merged.yaml"""
import sys

import yaml


def merge(base, over):
    """over merged into base (neither changed)."""
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(base[k], v) if k in base else v
    return out


def load(paths):
    config = {}
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise SystemExit(f"lab/run: cannot read the config file {p}: {e}")
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise SystemExit(f"lab/run: the config file {p} must hold a mapping (keys and values), not {type(doc).__name__}")
        config = merge(config, doc)
    return config


if __name__ == "__main__":
    yaml.safe_dump(load(sys.argv[1:]), sys.stdout, sort_keys=False, allow_unicode=True)
