// SPDX-License-Identifier: GPL-2.0-only
/*
 * Geohash arithmetic (geo.h) against the values of Redis's own documentation
 * (GEOADD, GEODIST, GEOHASH, GEOPOS of Palermo and Catania): scores,
 * distances, geohash strings, decoding, and the search boxes' invariants.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "geo.h"

#include "kselftest_harness.h"

#define PALERMO 13.361389, 38.115556
#define CATANIA 15.087269, 37.502669

TEST(scores_as_redis_stores_them)
{
	ASSERT_EQ(3479099956230698ULL, geo_score(PALERMO));
	ASSERT_EQ(3479447370796909ULL, geo_score(CATANIA));
}

TEST(positions_decode_to_the_cell_centre)
{
	double xy[2];

	ASSERT_TRUE(geo_decode_score(3479099956230698.0, xy));
	/* GEOPOS Sicily Palermo: 13.361389338970184, 38.1155563954963 */
	ASSERT_EQ(13.361389338970184, xy[0]);
	ASSERT_EQ(38.1155563954963, xy[1]);
	/* Any score decodes to some position inside the limits. */
	ASSERT_TRUE(geo_decode_score(INFINITY, xy));
	ASSERT_TRUE(geo_decode_score(-5, xy));
	ASSERT_EQ(180.0, xy[0]);
	ASSERT_EQ(GEO_LAT_MAX, xy[1]);
}

TEST(distance_and_geohash_string)
{
	double a[2], b[2];
	char s[12];

	geo_decode_score(3479099956230698.0, a);
	geo_decode_score(3479447370796909.0, b);
	/* GEODIST Sicily Palermo Catania: "166274.1516" */
	ASSERT_EQ(1662741516LL, llrint(geo_distance(a[0], a[1], b[0], b[1]) * 10000));
	ASSERT_TRUE(geo_hash_string(3479099956230698.0, s));
	ASSERT_STREQ("sqc8b49rny0", s);
	ASSERT_TRUE(geo_hash_string(3479447370796909.0, s));
	ASSERT_STREQ("sqdtr74hyu0", s);
}

/* The boxes of a search around Palermo contain Palermo's own score, and each
 * is a non-empty score range. */
TEST(search_boxes_cover_the_centre)
{
	struct geo_shape shape = { .xy = { PALERMO }, .conversion = 1000, .radius = 200 };
	uint64_t min[9], max[9], score = geo_score(PALERMO);
	int n = geo_search_boxes(&shape, min, max), found = 0;

	ASSERT_GE(n, 1);
	ASSERT_LE(n, 9);
	for (int i = 0; i < n; i++) {
		ASSERT_LT(min[i], max[i]);
		found += score >= min[i] && score < max[i];
	}
	ASSERT_EQ(1, found);
	ASSERT_LT(shape.bounds[0], 13.361389);
	ASSERT_GT(shape.bounds[3], 38.115556);
}

TEST(within_circle_and_box)
{
	struct geo_shape circle = { .xy = { PALERMO }, .conversion = 1000, .radius = 166.3 };
	struct geo_shape box = {
		.box = true, .xy = { PALERMO }, .conversion = 1000, .width = 400, .height = 10
	};
	double catania[2] = { CATANIA }, d;

	ASSERT_TRUE(geo_within(&circle, catania, &d));
	circle.radius = 166.2;
	ASSERT_FALSE(geo_within(&circle, catania, &d));
	/* 68 km of latitude apart: outside a box 10 km high. */
	ASSERT_FALSE(geo_within(&box, catania, &d));
	box.height = 200;
	ASSERT_TRUE(geo_within(&box, catania, &d));
}

TEST_HARNESS_MAIN
