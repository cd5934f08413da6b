// jitkernel metal_utils: element index -> memory offset for strided arrays,
// from the name_shape (int) / name_strides (int64_t, in elements) / name_ndim
// a metal_kernel body receives; and ceildiv. IdxT is the offset type (deduced
// from the index: `uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);`).

// Offset of the row-major element number `elem` of an ndim-dimensional array.
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides,
                            int ndim) {
  IdxT loc = 0;
  for (int d = ndim - 1; d >= 0 && elem > 0; --d) {
    loc += IdxT(elem % shape[d]) * IdxT(strides[d]);
    elem /= shape[d];
  }
  return loc;
}

// Offset of the element at a 3-D grid position: x indexes the last
// dimension, y the one before, z all leading dimensions (row-major).
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc(uint3 elem, constant const int* shape, constant const int64_t* strides,
                            int ndim) {
  IdxT loc = IdxT(elem.x) * IdxT(strides[ndim - 1]) + IdxT(elem.y) * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += IdxT(elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

// Fixed 1-, 2- and 3-dimensional versions (strides in array order).
template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc_1(uint elem, constant const int64_t& stride) {
  return IdxT(elem) * IdxT(stride);
}

template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc_2(uint2 elem, constant const int64_t strides[2]) {
  return IdxT(elem.x) * IdxT(strides[1]) + IdxT(elem.y) * IdxT(strides[0]);
}

template <typename IdxT = int64_t>
METAL_FUNC IdxT elem_to_loc_3(uint3 elem, constant const int64_t strides[3]) {
  return IdxT(elem.x) * IdxT(strides[2]) + IdxT(elem.y) * IdxT(strides[1]) +
         IdxT(elem.z) * IdxT(strides[0]);
}

// Offsets into two (three) arrays of the same shape at once.
template <typename IdxT = int64_t>
METAL_FUNC vec<IdxT, 2> elem_to_loc_2_nd(uint3 elem, constant const int* shape,
                                         constant const int64_t* a_strides,
                                         constant const int64_t* b_strides, int ndim) {
  vec<IdxT, 2> loc = {
      IdxT(elem.x) * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2]),
      IdxT(elem.x) * IdxT(b_strides[ndim - 1]) + IdxT(elem.y) * IdxT(b_strides[ndim - 2])};
  for (int d = ndim - 3; d >= 0; --d) {
    IdxT i = IdxT(elem.z % shape[d]);
    loc.x += i * IdxT(a_strides[d]);
    loc.y += i * IdxT(b_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

template <typename IdxT = int64_t>
METAL_FUNC vec<IdxT, 3> elem_to_loc_3_nd(uint3 elem, constant const int* shape,
                                         constant const int64_t* a_strides,
                                         constant const int64_t* b_strides,
                                         constant const int64_t* c_strides, int ndim) {
  vec<IdxT, 3> loc = {
      IdxT(elem.x) * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2]),
      IdxT(elem.x) * IdxT(b_strides[ndim - 1]) + IdxT(elem.y) * IdxT(b_strides[ndim - 2]),
      IdxT(elem.x) * IdxT(c_strides[ndim - 1]) + IdxT(elem.y) * IdxT(c_strides[ndim - 2])};
  for (int d = ndim - 3; d >= 0; --d) {
    IdxT i = IdxT(elem.z % shape[d]);
    loc.x += i * IdxT(a_strides[d]);
    loc.y += i * IdxT(b_strides[d]);
    loc.z += i * IdxT(c_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

// ceil(n / m) for positive integers.
template <typename T, typename U>
inline T ceildiv(T n, U m) {
  return (n + m - 1) / m;
}
