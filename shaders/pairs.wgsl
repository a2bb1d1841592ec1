// Pair access for the pair layout: load_pairs/store_pairs/rotate_pairs/add_pairs over the
// group of pairs an invocation owns.

#ifdef interleaved
#ifdef x4
#import pairs/interleaved_x4
#else
#import pairs/interleaved_x1
#endif
#endif
#ifdef halfsplit
#ifdef x4
#import pairs/halfsplit_x4
#else
#import pairs/halfsplit_x1
#endif
#endif
