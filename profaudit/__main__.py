import sys

from profaudit.cli import main

sys.exit(main())
