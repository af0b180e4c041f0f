#!/bin/sh
# A recovery script: runs before each retry an exit-code rule decided.
echo "$PLAYBOOK_RUN_ID $PLAYBOOK_STEP $PLAYBOOK_ATTEMPT $PLAYBOOK_RETURN_CODE $PLAYBOOK_LOG_DIR" >> "$PLAYBOOK_LOG_DIR/recovery.calls"
echo "remounted after exit code $PLAYBOOK_RETURN_CODE"
