// Pair access for the pair layout: load_pairs/store_pairs/rotate_pairs/add_pairs over the
// group of pairs an invocation owns, and store_out_pairs for a rotation into another buffer.

// Interleaved pairs written to another buffer as all first elements, then all second ones
// (OutputOrder::PairHalves, DeepSeek-V3's order in HF): pair j's elements go to lanes j and
// j + r/2, where half-split pairs sit. Set only with interleaved pairs and an output buffer.
override PAIR_HALVES: bool = false;

// Half-split pairs within blocks of `params.block` pairs (RopeSpec::pair_blocks, Gemma 4's
// vision tower): pair j at j + (j / block) block and `block` further. Set only by RoPE over
// half-split pairs in more than one block.
override BLOCKS: bool = false;

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
