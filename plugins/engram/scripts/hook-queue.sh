#!/bin/sh
# The name before hook.sh (it asks the hook server now as well as queueing): agents installed by an
# earlier engram run this path until "engram install <agent>" writes the new one.
exec sh "${0%/*}/hook.sh" "$@"
