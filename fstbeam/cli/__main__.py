from .generate import command

raise SystemExit(command())
