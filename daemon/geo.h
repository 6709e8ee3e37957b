/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * geo: the geohash arithmetic behind the GEO commands, as Redis computes it,
 * so that scores, positions, distances and search results agree with Redis.
 *
 * A position is stored as a sorted set score: its 52-bit geohash (26 steps
 * of longitude and latitude bits interleaved, latitude in the even bits),
 * over longitudes [-180, 180] and latitudes [-85.05112878, 85.05112878] (the
 * Web Mercator limits). A search covers the query shape with the geohash box
 * of its centre and its eight neighbours at a precision fitting the radius,
 * and each box is a range of scores.
 */
#ifndef XKV_GEO_H
#define XKV_GEO_H

#include <stdbool.h>
#include <stdint.h>

#define GEO_STEP_MAX 26
#define GEO_LAT_MIN -85.05112878
#define GEO_LAT_MAX 85.05112878
#define GEO_LONG_MIN -180.0
#define GEO_LONG_MAX 180.0

/* A geohash of 2 * step bits. bits == 0 && step == 0 is "no box". */
struct geo_hash {
	uint64_t bits;
	uint8_t step;
};

struct geo_range {
	double min, max;
};

struct geo_area {
	struct geo_hash hash;
	struct geo_range lon, lat;
};

/* What a search looks for: a circle or a rectangle around xy. */
struct geo_shape {
	bool box;
	double xy[2];	      /* longitude, latitude of the centre */
	double conversion;    /* metres per unit of radius/width/height */
	double radius;	      /* circle, in units */
	double width, height; /* box, in units */
	double bounds[4];     /* min lon, min lat, max lon, max lat (filled by geo_search_boxes) */
};

/* Encodes a position into hash with step bits per coordinate over the given
 * ranges; false outside them. */
bool geo_encode(const struct geo_range *lon, const struct geo_range *lat, double longitude,
		double latitude, uint8_t step, struct geo_hash *hash);
/* The 52-bit score of a position (which must be valid). */
uint64_t geo_score(double longitude, double latitude);
/* The position (cell centre) a score stands for; false if it is not one. */
bool geo_decode_score(double score, double *xy);

/* Metres between two positions (haversine on Redis's Earth radius). */
double geo_distance(double lon1, double lat1, double lon2, double lat2);
/* Is the position xy inside shape? Its distance from the centre in *dist. */
bool geo_within(const struct geo_shape *shape, const double *xy, double *dist);

/* The score ranges [min, max) of the nine boxes a search scans, in the order
 * Redis scans them (centre, N, S, E, W, NE, NW, SE, SW), with the useless
 * ones and repeats of the previous box left out. Returns how many. */
int geo_search_boxes(struct geo_shape *shape, uint64_t min[9], uint64_t max[9]);

/* The standard 11-character geohash string of a score (GEOHASH). */
bool geo_hash_string(double score, char out[12]);

#endif
