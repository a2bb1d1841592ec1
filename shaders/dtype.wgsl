// Element access of the tensor bindings for the storage dtype: ld1/st1 (one element) and,
// with x4, ld4/st4 (four). Arithmetic is f32 for every dtype.

#ifdef f32
#ifdef x4
#import dtype/f32_x4
#else
#import dtype/f32_x1
#endif
#endif
#ifdef f16
#ifdef x4
#import dtype/f16_x4
#else
#import dtype/f16_x1
#endif
#endif
#ifdef bf16
#ifdef x4
#import dtype/bf16_x4
#else
#import dtype/bf16_x1
#endif
#endif
