#!/bin/bash
# The differential test's second half (test_backend_diff.sh says what it
# does): the last third of its seeds, from a random seed of its own, and
# its positive controls (bugs planted in the nftables backend and in nfbox
# trace must be caught). A suite of its own so that the runner runs both
# halves at once.
exec env NFBOX_DIFF_PART=2 "$(dirname "$0")/test_backend_diff.sh"
