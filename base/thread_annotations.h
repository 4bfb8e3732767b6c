// What each mutex guards, said so that clang checks it (-Wthread-safety):
// a Mutex is a capability, members name the mutex that guards them, and
// MutexLock holds one for a scope (waiting on a condition variable through it).
// Other compilers see plain mutexes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define VRI_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define VRI_THREAD_ANNOTATION(x)
#endif

#define VRI_CAPABILITY(x) VRI_THREAD_ANNOTATION(capability(x))
#define VRI_SCOPED_CAPABILITY VRI_THREAD_ANNOTATION(scoped_lockable)
#define VRI_GUARDED_BY(x) VRI_THREAD_ANNOTATION(guarded_by(x))
#define VRI_ACQUIRE(...) VRI_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define VRI_RELEASE(...) VRI_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define VRI_REQUIRES(...) VRI_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define VRI_EXCLUDES(...) VRI_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define VRI_RETURN_CAPABILITY(x) VRI_THREAD_ANNOTATION(lock_returned(x))
#define VRI_ASSERT_CAPABILITY(x) VRI_THREAD_ANNOTATION(assert_capability(x))
#define VRI_NO_THREAD_SAFETY_ANALYSIS VRI_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace vri {

class VRI_CAPABILITY("mutex") Mutex {
 public:
  void lock() VRI_ACQUIRE() { mutex_.lock(); }
  void unlock() VRI_RELEASE() { mutex_.unlock(); }

 private:
  std::mutex mutex_;
};

class VRI_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) VRI_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() VRI_RELEASE() { mutex_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // The mutex is released while waiting and held again on return.
  void wait(std::condition_variable_any& cv) { cv.wait(mutex_); }
  template <typename Rep, typename Period>
  std::cv_status waitFor(std::condition_variable_any& cv, std::chrono::duration<Rep, Period> timeout) {
    return cv.wait_for(mutex_, timeout);
  }
  template <typename Clock, typename Duration>
  std::cv_status waitUntil(std::condition_variable_any& cv, std::chrono::time_point<Clock, Duration> deadline) {
    return cv.wait_until(mutex_, deadline);
  }

 private:
  Mutex& mutex_;
};

}  // namespace vri
