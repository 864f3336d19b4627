import sys

from braze.tools.cli import main

sys.exit(main())
