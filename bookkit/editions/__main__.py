import sys

from bookkit.editions import main

sys.exit(main())
