#!/bin/sh
# The flaky_io rule's recovery script: "remounts" the disk transform needs.
# It sees the step's env ($WORKDIR) and the PLAYBOOK_* variables.
echo "remounting after exit $PLAYBOOK_RETURN_CODE of $PLAYBOOK_STEP, attempt $PLAYBOOK_ATTEMPT"
touch "$WORKDIR/mounted"
