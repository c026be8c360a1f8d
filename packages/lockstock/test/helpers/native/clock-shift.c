/*
 * clock-shift: an LD_PRELOAD shim that shifts one process's wall clock at run time, for fault tests
 * (a clock jump on one Redis master). libfaketime cannot run Debian's redis-server: it is linked
 * against jemalloc, whose initialisation calls clock_gettime before libfaketime is ready, and
 * libfaketime aborts ("Unexpected recursive calls to clock_gettime()"). This shim looks nothing up
 * (no dlsym) and allocates nothing: it asks the kernel directly (syscall), so it works from the
 * first instruction.
 *
 * What it shifts: CLOCK_REALTIME and its variants (clock_gettime), gettimeofday and time — the wall
 * clock. Redis reads it through ustime() (gettimeofday) for mstime(), which sets a key's absolute
 * expiry (SET PX) and decides whether it has passed. CLOCK_MONOTONIC and the others are unchanged,
 * so Redis's timers (getMonotonicUs) and Node's performance.now() keep real time.
 *
 * By how much: the signed number of milliseconds in the file named by LOCKSTOCK_CLOCK_SHIFT_FILE
 * (0 when unset, missing or unreadable). The file is read on every call, so a test jumps the clock by
 * replacing the file (write a temp file, rename it over: a reader never sees half a number); the next
 * clock read of the process sees the new offset. Three system calls per clock read: fine for a test
 * server, not for production.
 *
 * Build: cc -shared -fPIC -O2 -o clock-shift.so clock-shift.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_ns(void) {
  const char *path = getenv("LOCKSTOCK_CLOCK_SHIFT_FILE");
  if (path == NULL) return 0;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32];
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char *p = buf;
  while (*p == ' ' || *p == '\t') p++;
  int negative = 0;
  if (*p == '-' || *p == '+') negative = *p++ == '-';
  long long ms = 0;
  while (*p >= '0' && *p <= '9') ms = ms * 10 + (*p++ - '0');
  return (negative ? -ms : ms) * 1000000LL;
}

static int is_wall_clock(clockid_t id) {
  return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_REALTIME_ALARM ||
         id == CLOCK_TAI;
}

static void add_ns(struct timespec *ts, long long ns) {
  long long total = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + ns;
  ts->tv_sec = (time_t)(total / 1000000000LL);
  ts->tv_nsec = (long)(total % 1000000000LL);
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000L;
    ts->tv_sec -= 1;
  }
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long result = syscall(SYS_clock_gettime, id, ts); /* sets errno itself on failure */
  if (result == 0 && is_wall_clock(id)) add_ns(ts, shift_ns());
  return (int)result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  struct timeval *out = tv; /* glibc declares tv nonnull; callers may still pass NULL */
  if (out != NULL) {
    out->tv_sec = ts.tv_sec;
    out->tv_usec = ts.tv_nsec / 1000;
  }
  if (tz != NULL) {
    struct timezone *zone = tz;
    zone->tz_minuteswest = 0;
    zone->tz_dsttime = 0;
  }
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
