#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
grep -qx 'port = 8080' settings.ini && grep -qx 'debug = false' settings.ini && grep -qx 'host = localhost' settings.ini && grep -qx 'name = demo' settings.ini
