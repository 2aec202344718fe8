"""``python -m cli`` runs the advisor command line."""

from cli.main import main

raise SystemExit(main())
