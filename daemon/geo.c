// SPDX-License-Identifier: BSD-3-Clause
/*
 * geo: geohash encoding, neighbours, search boxes and distances (geo.h). The
 * arithmetic follows Redis's step for step (same operations in the same
 * order, the same constants), since a result one ulp away is a different
 * score, a different distance string or a member inside instead of outside.
 */
#include <math.h>
#include <string.h>

#include "geo.h"

#define D_R (M_PI / 180.0)
#define EARTH_RADIUS_IN_METERS 6372797.560856
#define MERCATOR_MAX 20037726.37

static const struct geo_range lon_range = { GEO_LONG_MIN, GEO_LONG_MAX };
static const struct geo_range lat_range = { GEO_LAT_MIN, GEO_LAT_MAX };

static inline double deg_rad(double ang)
{
	return ang * D_R;
}

static inline double rad_deg(double ang)
{
	return ang / D_R;
}

/* x's bits to the even positions, y's to the odd ones. */
static uint64_t interleave(uint32_t xlo, uint32_t ylo)
{
	static const uint64_t mask[] = { 0x5555555555555555ULL, 0x3333333333333333ULL,
					 0x0F0F0F0F0F0F0F0FULL, 0x00FF00FF00FF00FFULL,
					 0x0000FFFF0000FFFFULL };
	uint64_t x = xlo, y = ylo;

	for (int i = 4; i >= 0; i--) {
		x = (x | (x << (1u << i))) & mask[i];
		y = (y | (y << (1u << i))) & mask[i];
	}
	return x | (y << 1);
}

/* The even bits in the low half, the odd ones in the high half. */
static uint64_t deinterleave(uint64_t v)
{
	static const uint64_t mask[] = { 0x5555555555555555ULL, 0x3333333333333333ULL,
					 0x0F0F0F0F0F0F0F0FULL, 0x00FF00FF00FF00FFULL,
					 0x0000FFFF0000FFFFULL, 0x00000000FFFFFFFFULL };
	uint64_t x = v, y = v >> 1;

	x &= mask[0];
	y &= mask[0];
	for (int i = 1; i <= 5; i++) {
		x = (x | (x >> (1u << (i - 1)))) & mask[i];
		y = (y | (y >> (1u << (i - 1)))) & mask[i];
	}
	return x | (y << 32);
}

bool geo_encode(const struct geo_range *lon, const struct geo_range *lat, double longitude,
		double latitude, uint8_t step, struct geo_hash *hash)
{
	if (step == 0 || step > 32 || longitude > GEO_LONG_MAX || longitude < GEO_LONG_MIN ||
	    latitude > GEO_LAT_MAX || latitude < GEO_LAT_MIN)
		return false;
	if (latitude < lat->min || latitude > lat->max || longitude < lon->min ||
	    longitude > lon->max)
		return false;
	double lat_offset = (latitude - lat->min) / (lat->max - lat->min);
	double lon_offset = (longitude - lon->min) / (lon->max - lon->min);

	lat_offset *= (double)(1ULL << step);
	lon_offset *= (double)(1ULL << step);
	hash->bits = interleave((uint32_t)lat_offset, (uint32_t)lon_offset);
	hash->step = step;
	return true;
}

static bool geo_decode(struct geo_hash hash, struct geo_area *area)
{
	uint64_t sep = deinterleave(hash.bits);
	uint32_t ilat = (uint32_t)sep, ilon = (uint32_t)(sep >> 32);
	double lat_scale = lat_range.max - lat_range.min;
	double lon_scale = lon_range.max - lon_range.min;
	double cells = (double)(1ULL << hash.step);

	if (!hash.bits && !hash.step)
		return false;
	area->hash = hash;
	area->lat.min = lat_range.min + (ilat * 1.0 / cells) * lat_scale;
	area->lat.max = lat_range.min + ((ilat + 1) * 1.0 / cells) * lat_scale;
	area->lon.min = lon_range.min + (ilon * 1.0 / cells) * lon_scale;
	area->lon.max = lon_range.min + ((ilon + 1) * 1.0 / cells) * lon_scale;
	return true;
}

static void area_centre(const struct geo_area *area, double *xy)
{
	xy[0] = (area->lon.min + area->lon.max) / 2;
	if (xy[0] > GEO_LONG_MAX)
		xy[0] = GEO_LONG_MAX;
	if (xy[0] < GEO_LONG_MIN)
		xy[0] = GEO_LONG_MIN;
	xy[1] = (area->lat.min + area->lat.max) / 2;
	if (xy[1] > GEO_LAT_MAX)
		xy[1] = GEO_LAT_MAX;
	if (xy[1] < GEO_LAT_MIN)
		xy[1] = GEO_LAT_MIN;
}

/* A box's hash widened to the 52 bits of a score. */
static uint64_t align52(struct geo_hash hash)
{
	return hash.bits << (52 - hash.step * 2);
}

uint64_t geo_score(double longitude, double latitude)
{
	struct geo_hash hash = { 0, 0 };

	geo_encode(&lon_range, &lat_range, longitude, latitude, GEO_STEP_MAX, &hash);
	return align52(hash);
}

/* A double truncated to an integer as x86-64's cvttsd2si does: out of
 * range (NaN included) gives INT64_MIN. */
static int64_t x86_truncate(double d)
{
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
		return (int64_t)d;
	return INT64_MIN;
}

bool geo_decode_score(double score, double *xy)
{
	struct geo_hash hash = { 0, GEO_STEP_MAX };
	struct geo_area area;

	/* Any score may be in a sorted set: decode what Redis's (uint64_t) cast
	 * makes of it on x86-64, without C's undefined behaviour. */
	if (score < 9223372036854775808.0)
		hash.bits = (uint64_t)x86_truncate(score);
	else
		hash.bits = (uint64_t)x86_truncate(score - 9223372036854775808.0) ^ (1ULL << 63);
	if (!geo_decode(hash, &area))
		return false;
	area_centre(&area, xy);
	return true;
}

/* ---- distances ------------------------------------------------------------------------ */

static double lat_distance(double lat1, double lat2)
{
	return EARTH_RADIUS_IN_METERS * fabs(deg_rad(lat2) - deg_rad(lat1));
}

double geo_distance(double lon1, double lat1, double lon2, double lat2)
{
	double v = sin((deg_rad(lon2) - deg_rad(lon1)) / 2), u, a;

	/* Equal longitudes: the distance along the meridian, without the trigonometry. */
	if (v == 0.0)
		return lat_distance(lat1, lat2);
	u = sin((deg_rad(lat2) - deg_rad(lat1)) / 2);
	a = u * u + cos(deg_rad(lat1)) * cos(deg_rad(lat2)) * v * v;
	return 2.0 * EARTH_RADIUS_IN_METERS * asin(sqrt(a));
}

bool geo_within(const struct geo_shape *shape, const double *xy, double *dist)
{
	if (!shape->box) {
		*dist = geo_distance(shape->xy[0], shape->xy[1], xy[0], xy[1]);
		return *dist <= shape->radius * shape->conversion;
	}
	/* The latitude test is the cheaper one, so it goes first. */
	if (lat_distance(xy[1], shape->xy[1]) > shape->height * shape->conversion / 2)
		return false;
	if (geo_distance(xy[0], xy[1], shape->xy[0], xy[1]) > shape->width * shape->conversion / 2)
		return false;
	*dist = geo_distance(shape->xy[0], shape->xy[1], xy[0], xy[1]);
	return true;
}

/* ---- search boxes --------------------------------------------------------------------- */

/* Moves a hash one cell east (d > 0) or west: its odd (longitude) bits. */
static void move_x(struct geo_hash *hash, int d)
{
	uint64_t x = hash->bits & 0xaaaaaaaaaaaaaaaaULL, y = hash->bits & 0x5555555555555555ULL;
	uint64_t zz = 0x5555555555555555ULL >> (64 - hash->step * 2);

	if (d > 0) {
		x = x + (zz + 1);
	} else {
		x = x | zz;
		x = x - (zz + 1);
	}
	x &= 0xaaaaaaaaaaaaaaaaULL >> (64 - hash->step * 2);
	hash->bits = x | y;
}

/* Moves a hash one cell north (d > 0) or south: its even (latitude) bits. */
static void move_y(struct geo_hash *hash, int d)
{
	uint64_t x = hash->bits & 0xaaaaaaaaaaaaaaaaULL, y = hash->bits & 0x5555555555555555ULL;
	uint64_t zz = 0xaaaaaaaaaaaaaaaaULL >> (64 - hash->step * 2);

	if (d > 0) {
		y = y + (zz + 1);
	} else {
		y = y | zz;
		y = y - (zz + 1);
	}
	y &= 0x5555555555555555ULL >> (64 - hash->step * 2);
	hash->bits = x | y;
}

enum { CENTRE, NORTH, SOUTH, EAST, WEST, NORTH_EAST, NORTH_WEST, SOUTH_EAST, SOUTH_WEST };

/* The centre box and its neighbours, in scan order. */
static void neighbours(struct geo_hash hash, struct geo_hash *n)
{
	static const int dx[] = { 0, 0, 0, 1, -1, 1, -1, 1, -1 };
	static const int dy[] = { 0, 1, -1, 0, 0, 1, 1, -1, -1 };

	for (int i = 0; i < 9; i++) {
		n[i] = hash;
		if (dx[i])
			move_x(&n[i], dx[i]);
		if (dy[i])
			move_y(&n[i], dy[i]);
	}
}

static int steps_for_radius(double metres, double lat)
{
	int step = 1;

	if (metres == 0)
		return GEO_STEP_MAX;
	while (metres < MERCATOR_MAX) {
		metres *= 2;
		step++;
	}
	step -= 2; /* so that the radius fits in most cases */
	/* Meridians converge towards the poles: wider boxes there. */
	if (lat > 66 || lat < -66) {
		step--;
		if (lat > 80 || lat < -80)
			step--;
	}
	if (step < 1)
		step = 1;
	if (step > GEO_STEP_MAX)
		step = GEO_STEP_MAX;
	return step;
}

static void bounding_box(struct geo_shape *shape)
{
	double lon = shape->xy[0], lat = shape->xy[1];
	double height = shape->conversion * (shape->box ? shape->height / 2 : shape->radius);
	double width = shape->conversion * (shape->box ? shape->width / 2 : shape->radius);
	const double lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
	const double lon_delta_top =
		rad_deg(width / EARTH_RADIUS_IN_METERS / cos(deg_rad(lat + lat_delta)));
	const double lon_delta_bottom =
		rad_deg(width / EARTH_RADIUS_IN_METERS / cos(deg_rad(lat - lat_delta)));
	/* The wider edge is the one nearer the equator. */
	bool south = lat < 0;

	shape->bounds[0] = south ? lon - lon_delta_bottom : lon - lon_delta_top;
	shape->bounds[2] = south ? lon + lon_delta_bottom : lon + lon_delta_top;
	shape->bounds[1] = lat - lat_delta;
	shape->bounds[3] = lat + lat_delta;
}

int geo_search_boxes(struct geo_shape *shape, uint64_t min[9], uint64_t max[9])
{
	struct geo_hash hash = { 0, 0 }, n[9];
	struct geo_area area, side;
	double radius;
	int steps, count = 0, last = 0;
	bool decrease = false;

	bounding_box(shape);
	radius = shape->box ? sqrt((shape->width / 2) * (shape->width / 2) +
				   (shape->height / 2) * (shape->height / 2))
			    : shape->radius;
	radius *= shape->conversion;
	steps = steps_for_radius(radius, shape->xy[1]);
	geo_encode(&lon_range, &lat_range, shape->xy[0], shape->xy[1], (uint8_t)steps, &hash);
	neighbours(hash, n);

	/* Near a box's edge the estimated step may leave part of the shape
	 * outside the nine boxes: one step coarser then. */
	if (geo_decode(n[NORTH], &side) && side.lat.max < shape->bounds[3])
		decrease = true;
	if (geo_decode(n[SOUTH], &side) && side.lat.min > shape->bounds[1])
		decrease = true;
	if (geo_decode(n[EAST], &side) && side.lon.max < shape->bounds[2])
		decrease = true;
	if (geo_decode(n[WEST], &side) && side.lon.min > shape->bounds[0])
		decrease = true;
	if (steps > 1 && decrease) {
		steps--;
		geo_encode(&lon_range, &lat_range, shape->xy[0], shape->xy[1], (uint8_t)steps,
			   &hash);
		neighbours(hash, n);
	}
	geo_decode(hash, &area);

	/* Leave out the neighbours the shape does not reach. */
	if (steps >= 2) {
		static const struct geo_hash none = { 0, 0 };

		if (area.lat.min < shape->bounds[1])
			n[SOUTH] = n[SOUTH_WEST] = n[SOUTH_EAST] = none;
		if (area.lat.max > shape->bounds[3])
			n[NORTH] = n[NORTH_EAST] = n[NORTH_WEST] = none;
		if (area.lon.min < shape->bounds[0])
			n[WEST] = n[SOUTH_WEST] = n[NORTH_WEST] = none;
		if (area.lon.max > shape->bounds[2])
			n[EAST] = n[SOUTH_EAST] = n[NORTH_EAST] = none;
	}
	for (int i = 0; i < 9; i++) {
		struct geo_hash next;

		if (!n[i].bits && !n[i].step)
			continue;
		/* Huge radii make neighbours coincide: a box equal to the last
		 * one scanned (not counting the centre, as Redis) is skipped. */
		if (last && n[i].bits == n[last].bits && n[i].step == n[last].step)
			continue;
		min[count] = align52(n[i]);
		next = n[i];
		next.bits++;
		max[count] = align52(next);
		count++;
		last = i;
	}
	return count;
}

bool geo_hash_string(double score, char out[12])
{
	static const char alphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
	static const struct geo_range lon = { -180, 180 }, lat = { -90, 90 };
	struct geo_hash hash;
	double xy[2];

	if (!geo_decode_score(score, xy) || !geo_encode(&lon, &lat, xy[0], xy[1], 26, &hash))
		return false;
	/* 52 bits make ten characters; the eleventh is '0', as Redis writes it. */
	for (int i = 0; i < 11; i++)
		out[i] = alphabet[i == 10 ? 0 : (hash.bits >> (52 - (i + 1) * 5)) & 0x1f];
	out[11] = '\0';
	return true;
}
