#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# A service manager's notify socket, for the tests: binds a Unix datagram
# socket at PATH (world-writable, so that a daemon that dropped its
# privileges can still send), says "listening" on stdout, then appends every
# datagram it gets to OUT, each of its lines on a line of its own
# (READY=1, STATUS=..., WATCHDOG=1, STOPPING=1), until killed.
#
# usage: notify_listen.py PATH OUT
import os
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
os.chmod(path, 0o777)
print("listening", flush=True)
with open(out, "ab", buffering=0) as f:
    while True:
        data = sock.recv(65536)
        f.write(data.rstrip(b"\n") + b"\n")
