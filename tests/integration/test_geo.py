# SPDX-License-Identifier: GPL-2.0-only
"""Geo: GEOADD, GEOPOS, GEODIST, GEOHASH, GEORADIUS(BYMEMBER)(_RO), GEOSEARCH
and GEOSEARCHSTORE, compared with redis-server 7.0 byte for byte: the scores
GEOADD stores, positions, distances in every unit, geohash strings, searches
by radius and box with every option (results in Redis's scan order when
unsorted), STORE/STOREDIST, and the errors. A randomized run compares
searches over random points around the world, poles and antimeridian
included.

Coordinates (GEOPOS, WITHCOORD) are printed as Redis 8 prints doubles, with
the fewest digits that read back as the same double, where Redis 7.0 prints
17 decimals: those steps compare the doubles' values, and
coordinates_are_shortest checks the digits themselves."""

import random
import re

from harness import Cmd, test, xkv_only

FLOAT = re.compile(rb'^-?[0-9]+\.[0-9]+(e[-+][0-9]+)?$')


def _values(v):
    if isinstance(v, list):
        return [_values(x) for x in v]
    if isinstance(v, bytes) and FLOAT.match(v):
        # Redis 7.0 prints 17 decimals, which is lossy below 0.01: a
        # geohash cell is 1e-6 degrees wide, so 12 decimals still tell
        # any two cells apart.
        return round(float(v), 12)
    return v


class Coords(Cmd):
    """A compare step whose reply carries coordinates: compared as doubles."""

    def run(self, c):
        return _values(c.call(*self.args))

    def __repr__(self):
        return Cmd.__repr__(self) + ' (coordinates as doubles)'


def coords(steps):
    """Steps that print coordinates become Coords steps."""
    out = []
    for s in steps:
        if s[0] == 'GEOPOS' or 'WITHCOORD' in s:
            s = Coords(*s)
        out.append(s)
    return out

PLACES = ('Sicily', 13.361389, 38.115556, 'Palermo', 15.087269, 37.502669, 'Catania',
          13.583333, 37.316667, 'Agrigento', 12.758489, 38.788135, 'edge1',
          12.639533, 38.115556, 'edge2')


@test
def add_pos_dist_hash(t):
    t.compare(coords([
        ('GEOADD',) + PLACES, ('ZRANGE', 'Sicily', 0, -1, 'WITHSCORES'),
        ('GEOADD', 'Sicily', 13.361389, 38.115556, 'Palermo'),
        ('GEOADD', 'Sicily', 'CH', 13.4, 38.1, 'Palermo'),
        ('GEOADD', 'Sicily', 'NX', 'CH', 1, 1, 'Palermo', 2, 2, 'new'),
        ('GEOADD', 'Sicily', 'XX', 3, 3, 'new', 4, 4, 'newer'),
        ('GEOADD', 'missing', 'XX', 3, 3, 'x'), ('EXISTS', 'missing'),
        ('GEOPOS', 'Sicily', 'Palermo', 'Catania', 'nope'), ('GEOPOS', 'missing', 'a'),
        ('GEODIST', 'Sicily', 'Palermo', 'Catania'), ('GEODIST', 'Sicily', 'Palermo', 'Catania', 'km'),
        ('GEODIST', 'Sicily', 'Palermo', 'Catania', 'MI'), ('GEODIST', 'Sicily', 'Palermo', 'Catania', 'ft'),
        ('GEODIST', 'Sicily', 'Palermo', 'nope'), ('GEODIST', 'missing', 'a', 'b'),
        ('GEODIST', 'Sicily', 'Palermo', 'Catania', 'yards'),
        ('GEODIST', 'Sicily', 'Palermo', 'Catania', 'km', 'x'),
        ('GEOHASH', 'Sicily', 'Palermo', 'Catania', 'nope'), ('GEOHASH', 'missing', 'a'),
        ('GEOADD', 'poles', 180, 85.05112878, 'ne', -180, -85.05112878, 'sw', 0, 0, 'zero'),
        ('GEOPOS', 'poles', 'ne', 'sw', 'zero'), ('GEOHASH', 'poles', 'ne', 'sw', 'zero'),
    ]))


@test
def add_errors(t):
    t.compare(coords([
        ('GEOADD', 'g', 181, 10, 'x'), ('GEOADD', 'g', 10, 86, 'x'), ('GEOADD', 'g', 'a', 10, 'x'),
        ('GEOADD', 'g', 10, 10), ('GEOADD', 'g', 'NX', 'XX', 10, 10, 'x'),
        ('GEOADD', 'g', 'NX', 'CH', 'CH'), ('GEOADD', 'g', 'GT', 10, 10, 'x'),
        ('GEOADD', 'g', 10, 10, 'x', 200, 10, 'y'), ('EXISTS', 'g'),
        ('SET', 's', 'v'), ('GEOADD', 's', 10, 10, 'x'), ('GEOPOS', 's', 'x'),
        ('GEOHASH', 's', 'x'), ('GEODIST', 's', 'a', 'b'), ('GEOSEARCH', 's', 'FROMLONLAT', 0, 0,
                                                           'BYRADIUS', 1, 'km'),
        ('ZADD', 'z', 'inf', 'weird', -5, 'neg'), ('GEOPOS', 'z', 'weird', 'neg'),
        ('GEOHASH', 'z', 'weird', 'neg'),
    ]))


def search_steps():
    base = [('GEOADD',) + PLACES]
    opts = [(), ('WITHDIST',), ('WITHCOORD',), ('WITHHASH',), ('WITHDIST', 'WITHCOORD', 'WITHHASH'),
            ('ASC',), ('DESC',), ('COUNT', 2), ('COUNT', 2, 'DESC'), ('COUNT', 1, 'ANY'),
            ('WITHDIST', 'COUNT', 3, 'ASC')]
    steps = list(base)
    for o in opts:
        steps.append(('GEORADIUS', 'Sicily', 15, 37, 200, 'km') + o)
        steps.append(('GEORADIUS_RO', 'Sicily', 15, 37, 200000, 'm') + o)
        steps.append(('GEORADIUSBYMEMBER', 'Sicily', 'Palermo', 100, 'mi') + o)
        steps.append(('GEORADIUSBYMEMBER_RO', 'Sicily', 'Agrigento', 300000, 'ft') + o)
        steps.append(('GEOSEARCH', 'Sicily', 'FROMLONLAT', 15, 37, 'BYBOX', 400, 400, 'km') + o)
        steps.append(('GEOSEARCH', 'Sicily', 'FROMMEMBER', 'edge1', 'BYRADIUS', 200, 'km') + o)
    steps += [
        ('GEORADIUS', 'Sicily', 15, 37, 200, 'km', 'STORE', 'dst'), ('ZRANGE', 'dst', 0, -1, 'WITHSCORES'),
        ('GEORADIUS', 'Sicily', 15, 37, 200, 'km', 'STOREDIST', 'dst', 'COUNT', 2),
        ('ZRANGE', 'dst', 0, -1, 'WITHSCORES'),
        ('GEORADIUS', 'Sicily', 15, 37, 1, 'km', 'STORE', 'dst'), ('EXISTS', 'dst'),
        ('GEORADIUSBYMEMBER', 'Sicily', 'Palermo', 10, 'km', 'STORE', 'Sicily'),
        ('ZRANGE', 'Sicily', 0, -1, 'WITHSCORES'),
        ('GEOADD',) + PLACES,
        ('GEOSEARCHSTORE', 'd2', 'Sicily', 'FROMLONLAT', 15, 37, 'BYBOX', 400, 400, 'km', 'STOREDIST'),
        ('ZRANGE', 'd2', 0, -1, 'WITHSCORES'),
        ('GEOSEARCHSTORE', 'd2', 'missing', 'FROMLONLAT', 15, 37, 'BYBOX', 400, 400, 'km'),
        ('EXISTS', 'd2'),
        ('GEORADIUS', 'missing', 15, 37, 200, 'km'), ('GEORADIUSBYMEMBER', 'missing', 'x', 1, 'km'),
        ('GEORADIUSBYMEMBER', 'missing', 'x', 1, 'km', 'STORE', 'Sicily'), ('EXISTS', 'Sicily'),
    ]
    return steps


@test
def searches(t):
    # STOREDIST stores distances as scores: Redis 8.8 prints them shortest.
    t.compare(coords(search_steps()), doubles8=True)


@test
def search_errors(t):
    t.compare([
        ('GEOADD',) + PLACES,
        ('GEORADIUS', 'Sicily', 15, 37, -1, 'km'), ('GEORADIUS', 'Sicily', 15, 37, 'x', 'km'),
        ('GEORADIUS', 'Sicily', 15, 37, 1, 'parsec'), ('GEORADIUS', 'Sicily', 15, 37, 1, 'km', 'COUNT', 0),
        ('GEORADIUS', 'Sicily', 15, 37, 1, 'km', 'COUNT', 'x'), ('GEORADIUS', 'Sicily', 15, 37, 1, 'km', 'ANY'),
        ('GEORADIUS', 'Sicily', 15, 37, 1, 'km', 'STORE', 'x', 'WITHDIST'),
        ('GEORADIUS_RO', 'Sicily', 15, 37, 1, 'km', 'STORE', 'x'), ('GEORADIUS', 'Sicily', 15, 37, 1, 'km', 'BOGUS'),
        ('GEORADIUSBYMEMBER', 'Sicily', 'nope', 1, 'km'),
        ('GEOSEARCH', 'Sicily', 'BYRADIUS', 1, 'km'), ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1),
        ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1, 'FROMMEMBER', 'Palermo', 'BYRADIUS', 1, 'km'),
        ('GEOSEARCH', 'Sicily', 'FROMMEMBER', 'nope', 'BYRADIUS', 1, 'km'),
        ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1, 'BYBOX', 1, -1, 'km'),
        ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1, 'BYBOX', 'w', 1, 'km'),
        ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1, 'BYRADIUS', 1, 'km', 'BYBOX', 1, 1, 'km'),
        ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1, 'BYRADIUS', 1, 'km', 'STORE', 'x'),
        ('GEOSEARCH', 'Sicily', 'FROMLONLAT', 1, 1, 'BYRADIUS', 1, 'km', 'STOREDIST'),
        ('GEOSEARCHSTORE', 'd', 'Sicily', 'FROMLONLAT', 1, 1, 'BYRADIUS', 1, 'km', 'WITHDIST'),
        ('GEOSEARCH', 'missing', 'FROMMEMBER', 'x', 'BYRADIUS', 1, 'km'),
        ('GEOSEARCH', 'missing', 'FROMLONLAT', 200, 1, 'BYRADIUS', 1, 'km'),
        ('GEOSEARCH', 'Sicily', 'fromlonlat', 15, 37, 'byradius', 200, 'KM', 'asc', 'withdist'),
    ])


@test
def randomized_searches(t):
    rnd = random.Random(2024)
    steps = []
    for rounds in range(6):
        key = 'r%d' % rounds
        args = ['GEOADD', key]
        clat = rnd.uniform(-84, 84)
        clon = rnd.uniform(-179, 179)
        for i in range(300):
            lon = max(-180, min(180, clon + rnd.uniform(-20, 20)))
            lat = max(-85, min(85, clat + rnd.uniform(-10, 10)))
            args += ['%.6f' % lon, '%.6f' % lat, 'm%d' % i]
        steps.append(tuple(args))
        for _ in range(15):
            radius = rnd.choice([1, 10, 50, 200, 1000, 5000])
            steps.append(('GEOSEARCH', key, 'FROMLONLAT', '%.6f' % clon, '%.6f' % clat,
                          'BYRADIUS', radius, 'km', 'WITHDIST'))
            steps.append(('GEOSEARCH', key, 'FROMMEMBER', 'm%d' % rnd.randrange(300),
                          'BYBOX', radius, radius * 2, 'km', 'ASC', 'WITHCOORD'))
    t.compare(coords(steps))


@test
@xkv_only
def coordinates_are_shortest(t):
    """Redis 8 prints 13.361389338970184, 38.1155563954963: the shortest
    digits that read back as the double, as Python's repr()."""
    with t.sut.client() as c:
        c.call('GEOADD', 'g', *PLACES[1:])
        for lon, lat in c.call('GEOPOS', 'g', 'Palermo', 'Catania', 'Agrigento', 'edge1'):
            for v in (lon, lat):
                assert v == repr(float(v)).encode(), v
        pos = c.call('GEOPOS', 'g', 'Palermo')[0]
        assert pos == [b'13.361389338970184', b'38.1155563954963'], pos
        c.call('HELLO', 3)
        assert c.cmd('GEOPOS', 'g', 'Palermo') == \
            b'*1\r\n*2\r\n,13.361389338970184\r\n,38.1155563954963\r\n'
