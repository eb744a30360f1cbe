"""`python -m tools.leave_application_script`: rewrite the scenario's offline script."""

from tools.leave_application_script.make_offline_script import main

main()
