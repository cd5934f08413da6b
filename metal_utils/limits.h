// jitkernel metal_utils: Limits<T>::max / min (the identities of max / min
// reductions: +-infinity for floating types, the extreme values for
// integers) and Limits<T>::finite_max / finite_min (the largest finite
// values), as MLX kernels use them.

template <typename T>
struct Limits {
  static constexpr constant T max = metal::numeric_limits<T>::max();
  static constexpr constant T min = metal::numeric_limits<T>::min();
  static constexpr constant T finite_max = metal::numeric_limits<T>::max();
  static constexpr constant T finite_min = metal::numeric_limits<T>::min();
};

// Floating types: max / min are the infinities.
#define JK_FLOAT_LIMITS(T)                                                      \
  template <>                                                                   \
  struct Limits<T> {                                                            \
    static constexpr constant T max = metal::numeric_limits<T>::infinity();     \
    static constexpr constant T min = -metal::numeric_limits<T>::infinity();    \
    static constexpr constant T finite_max = metal::numeric_limits<T>::max();   \
    static constexpr constant T finite_min = -metal::numeric_limits<T>::max();  \
  };
JK_FLOAT_LIMITS(half)
JK_FLOAT_LIMITS(float)
JK_FLOAT_LIMITS(bfloat)
#undef JK_FLOAT_LIMITS

template <>
struct Limits<bool> {
  static constexpr constant bool max = true;
  static constexpr constant bool min = false;
  static constexpr constant bool finite_max = true;
  static constexpr constant bool finite_min = false;
};

template <typename T>
struct Limits<complex_t<T>> {
  static constexpr constant complex_t<T> max =
      complex_t<T>(metal::numeric_limits<T>::infinity(), metal::numeric_limits<T>::infinity());
  static constexpr constant complex_t<T> min =
      complex_t<T>(-metal::numeric_limits<T>::infinity(), -metal::numeric_limits<T>::infinity());
};
