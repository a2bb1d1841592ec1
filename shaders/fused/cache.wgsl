// The KV cache of the fused kernel in its own storage type: K at binding 9, V at binding 10;
// `st_cache(KC or VC, element, value)` one element at a time, `st_cache4` four (the first
// argument a constant at each call).

const KC: u32 = 0u;
const VC: u32 = 1u;

#ifdef cache_f32
#import fused/cache_f32
#endif
#ifdef cache_f16
#import fused/cache_f16
#endif
#ifdef cache_bf16
#import fused/cache_bf16
#endif
