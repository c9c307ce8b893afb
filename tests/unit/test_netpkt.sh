#!/bin/bash
# The packets tests/lib/net.py crafts with struct (frags, forge) are byte
# for byte those scapy builds from the layers it once used
# (tests/lib/netpktcheck.py): the namespace suites that send them
# (test_frag, test_synproxy, test_mapped) test what they always did.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
/usr/bin/python3 -c 'import scapy' 2>/dev/null ||
	{ t_fail netpkt "python3-scapy is missing (packaging/install-deps.sh installs it)"; t_done; }
/usr/bin/python3 tests/lib/netpktcheck.py || T_FAILED=$((T_FAILED + 1))
t_done
