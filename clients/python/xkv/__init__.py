# SPDX-License-Identifier: BSD-3-Clause
"""xkv: a redis-py client whose GET and MGET go over xkv's UDP fast path,
with TCP as the fallback (see README.md beside this package)."""

from .client import FastpathStats, Redis
from .cluster import RedisCluster
from .udp import token_from_number, token_from_password

StrictRedis = Redis
__all__ = ['Redis', 'RedisCluster', 'StrictRedis', 'FastpathStats', 'token_from_password', 'token_from_number']
__version__ = '0.1.0'
