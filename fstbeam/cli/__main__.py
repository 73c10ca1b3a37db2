from .main import command

raise SystemExit(command())
