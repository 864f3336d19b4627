/* One core's float32 FMA peak (bench/NOTES.md §57): 12 independent accumulator chains of 512-bit and
   256-bit FMAs.  gcc -O2 -mavx512f -mfma bench/experiments/cpu_fma_peak.c -o /tmp/fma && /tmp/fma */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define N 12
int main(){
  long iters=200000000;
  { __m512 a[N]; __m512 b=_mm512_set1_ps(1.0000001f), c=_mm512_set1_ps(1e-7f);
    for(int i=0;i<N;i++) a[i]=_mm512_set1_ps(i);
    double t=now();
    for(long k=0;k<iters;k++){
      #pragma GCC unroll 12
      for(int i=0;i<N;i++) a[i]=_mm512_fmadd_ps(a[i],b,c);
    }
    t=now()-t; float s=0; for(int i=0;i<N;i++) s+=_mm512_reduce_add_ps(a[i]);
    printf("zmm: %.1f GFLOP/s (%g)\n", iters*N*32.0/t/1e9, s);}
  { __m256 a[N]; __m256 b=_mm256_set1_ps(1.0000001f), c=_mm256_set1_ps(1e-7f);
    for(int i=0;i<N;i++) a[i]=_mm256_set1_ps(i);
    double t=now();
    for(long k=0;k<iters;k++){
      #pragma GCC unroll 12
      for(int i=0;i<N;i++) a[i]=_mm256_fmadd_ps(a[i],b,c);
    }
    t=now()-t; float s=0; for(int i=0;i<N;i++){float v[8];_mm256_storeu_ps(v,a[i]);for(int j=0;j<8;j++)s+=v[j];}
    printf("ymm: %.1f GFLOP/s (%g)\n", iters*N*16.0/t/1e9, s);}
}
