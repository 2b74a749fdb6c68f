#!/usr/bin/env python3
# Interleaved A/B of whole commands: each round runs every command once, in
# a shuffled order, by posix_spawn and waitpid (stdout and stderr to
# /dev/null), and the medians and quartiles of the wall times are printed.
# The machine's drift hits every command alike, which hyperfine's one
# command after the other does not.
#
#   bench/interleave.py 300 '/tmp/a version' '/tmp/b version'
#   LOCKCTL_URL=redis://127.0.0.1:6379 bench/interleave.py 300 \
#       '/tmp/a run x -- true' '/tmp/b run x -- true'
#
# Commands are split on spaces (no quoting); the first word is a path.
import os
import random
import statistics
import sys
import time

n = int(sys.argv[1])
cmds = [c.split() for c in sys.argv[2:]]
times = [[] for _ in cmds]
devnull = os.open(os.devnull, os.O_WRONLY)
actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
for _ in range(n):
    order = list(range(len(cmds)))
    random.shuffle(order)
    for j in order:
        t = time.perf_counter()
        pid = os.posix_spawn(cmds[j][0], cmds[j], os.environ, file_actions=actions)
        os.waitpid(pid, 0)
        times[j].append(time.perf_counter() - t)
for c, r in zip(sys.argv[2:], times):
    r.sort()
    print(f"{statistics.median(r) * 1000:7.2f} ms median  p25 {r[len(r) // 4] * 1000:6.2f}  "
          f"p75 {r[3 * len(r) // 4] * 1000:6.2f}  {c}")
