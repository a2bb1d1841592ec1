// Reads of the cos/sin cache (gather_cos, gather_sin) at the lanes' pair indices.

#ifdef x4
#import gather/x4
#else
#import gather/x1
#endif
