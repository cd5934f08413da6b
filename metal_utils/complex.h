// jitkernel metal_utils: complex_t<T> and complex64_t (the element type of
// complex64 arrays: two floats, real part first). Arithmetic and comparisons
// (lexicographic, real part first, as MLX orders complex numbers).

template <typename T>
struct complex_t {
  T real;
  T imag;

  constexpr complex_t() : real(0), imag(0) {}
  constexpr complex_t(T re, T im) : real(re), imag(im) {}

  // From a real number of any arithmetic type (imaginary part 0).
  template <typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
  constexpr complex_t(U x) : real(static_cast<T>(x)), imag(0) {}

  // From a complex number of another precision.
  template <typename U>
  constexpr complex_t(complex_t<U> z) : real(static_cast<T>(z.real)), imag(static_cast<T>(z.imag)) {}

  // From / to a two-lane vector (real, imag).
  constexpr complex_t(vec<T, 2> v) : real(v.x), imag(v.y) {}
  constexpr operator vec<T, 2>() const {
    return vec<T, 2>(real, imag);
  }
};

typedef complex_t<float> complex64_t;

static_assert(sizeof(complex64_t) == 2 * sizeof(float), "complex64_t must be two packed floats");

template <typename T>
constexpr complex_t<T> operator-(complex_t<T> z) {
  return complex_t<T>(-z.real, -z.imag);
}

template <typename T>
constexpr complex_t<T> operator+(complex_t<T> a, complex_t<T> b) {
  return complex_t<T>(a.real + b.real, a.imag + b.imag);
}

template <typename T>
constexpr complex_t<T> operator-(complex_t<T> a, complex_t<T> b) {
  return complex_t<T>(a.real - b.real, a.imag - b.imag);
}

template <typename T>
constexpr complex_t<T> operator*(complex_t<T> a, complex_t<T> b) {
  return complex_t<T>(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real);
}

template <typename T>
constexpr complex_t<T> operator/(complex_t<T> a, complex_t<T> b) {
  T scale = b.real * b.real + b.imag * b.imag;
  return complex_t<T>((a.real * b.real + a.imag * b.imag) / scale,
                      (a.imag * b.real - a.real * b.imag) / scale);
}

// Mixed with a real number.
template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator+(complex_t<T> a, U b) {
  return complex_t<T>(a.real + static_cast<T>(b), a.imag);
}

template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator+(U a, complex_t<T> b) {
  return complex_t<T>(static_cast<T>(a) + b.real, b.imag);
}

template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator-(complex_t<T> a, U b) {
  return complex_t<T>(a.real - static_cast<T>(b), a.imag);
}

template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator-(U a, complex_t<T> b) {
  return complex_t<T>(static_cast<T>(a) - b.real, -b.imag);
}

template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator*(complex_t<T> a, U b) {
  return complex_t<T>(a.real * static_cast<T>(b), a.imag * static_cast<T>(b));
}

template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator*(U a, complex_t<T> b) {
  return complex_t<T>(static_cast<T>(a) * b.real, static_cast<T>(a) * b.imag);
}

template <typename T, typename U, typename = typename enable_if<is_arithmetic<U>::value>::type>
constexpr complex_t<T> operator/(complex_t<T> a, U b) {
  return complex_t<T>(a.real / static_cast<T>(b), a.imag / static_cast<T>(b));
}

// a += b for a complex number in thread, threadgroup or device memory.
#define JK_COMPLEX_ADD_ASSIGN(SPACE)                                              \
  template <typename T>                                                           \
  constexpr SPACE complex_t<T>& operator+=(SPACE complex_t<T>& a, complex_t<T> b) { \
    a.real += b.real;                                                             \
    a.imag += b.imag;                                                             \
    return a;                                                                     \
  }
JK_COMPLEX_ADD_ASSIGN(thread)
JK_COMPLEX_ADD_ASSIGN(threadgroup)
JK_COMPLEX_ADD_ASSIGN(device)
#undef JK_COMPLEX_ADD_ASSIGN

template <typename T>
constexpr bool operator==(complex_t<T> a, complex_t<T> b) {
  return a.real == b.real && a.imag == b.imag;
}

template <typename T>
constexpr bool operator!=(complex_t<T> a, complex_t<T> b) {
  return !(a == b);
}

template <typename T>
constexpr bool operator>(complex_t<T> a, complex_t<T> b) {
  return a.real > b.real || (a.real == b.real && a.imag > b.imag);
}

template <typename T>
constexpr bool operator<(complex_t<T> a, complex_t<T> b) {
  return b > a;
}

template <typename T>
constexpr bool operator>=(complex_t<T> a, complex_t<T> b) {
  return !(b > a);
}

template <typename T>
constexpr bool operator<=(complex_t<T> a, complex_t<T> b) {
  return !(a > b);
}
