// The lane width: one pair per invocation (scalars) or four (vec4), as the aliases FV, UV and
// IV and the pair index of each lane; every other file is written once for both.

#ifdef x4
#import width/x4
#else
#import width/x1
#endif
