// The parallel-patterns example of docs/patterns.md (tally::patterns), on the CPU backend.
#include <tally/patterns/elementwise.hpp>
#include <tally/patterns/matmul.hpp>
#include <tally/patterns/reduce.hpp>

#include <cstdio>
#include <vector>

int main() {
  std::vector<float> x = {-2.0f, 0.5f, 3.0f}, y(3);
  tally::sigmoid(x.data(), y.data(), 3);  // host memory: the CPU backend
  std::printf("%.3f %.3f %.3f\n", y[0], y[1], y[2]);

  std::vector<float> a(6, 1.0f), b = {10.0f, 20.0f}, c(6);
  tally::add(tally::make_array(a.data(), {2, 3}), tally::make_array(b.data(), {2, 1}),
             tally::make_out_array(c.data(), {2, 3}));  // c = a + b[:, None]

  double total = 0;
  tally::reduce(tally::reduce_op::sum, tally::dtype::f32, c.data(), 6, tally::dtype::f64, &total);
  std::printf("%g\n", total);

  std::vector<float> m(4 * 3, 1.0f), n(3 * 2, 2.0f), p(4 * 2);
  tally::matmul(m.data(), n.data(), p.data(), 4, 2, 3);  // p (4x2) = m (4x3) x n (3x2)
  std::printf("%g\n", p[0]);
  return total == 96 && p == std::vector<float>(8, 6.0f) ? 0 : 1;
}
