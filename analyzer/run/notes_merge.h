/*
 * A GPU's notes, from its lanes' queues (merge_lane.h) to its totals
 * (struct vt_gpu_feed): in the merged order - (time, lane, file order) -
 * or, in the slices of a window where no order can change a figure, as
 * one change a lane. group_merge.h says when each is used.
 */
#ifndef VRAMTRACE_ANALYZER_NOTES_MERGE_H
#define VRAMTRACE_ANALYZER_NOTES_MERGE_H

#include "gpu_feed.h"
#include "merge_lane.h"

/* Hands the notes up to b of the lanes of set (none before base, none
 * past base + MAX_SPAN_NS) to the totals in the merged order; returns how
 * many. h: room for a key per lane. */
size_t vt_notes_merge(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                      uint64_t base, struct bound b, const struct vt_gpu_feed *feed);
/* One GPU's notes up to b (set: its lanes, each on it alone), slice by
 * slice of the window: as one change a lane where the order cannot change
 * a figure, else in the merged order. Returns how many. */
size_t vt_notes_merge_gpu(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                          uint64_t base, struct bound b, const struct vt_gpu_feed *feed);
/* Every note left, lane by lane (timestamps that went backwards); returns
 * how many. */
size_t vt_notes_merge_rest(struct lane *lanes, size_t nlanes, const struct vt_gpu_feed *feed);

#endif
