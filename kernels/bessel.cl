// kernels/bessel.cl — the Bessel functions of torch.special (clgrad/ops/bessel.py), one work
// item per element. elementwise.cl's machinery (UNARY, W, WC, bessel_i_w) is included: its
// kernels are built into this program too, as one binary per dtype. Floats only (float16 and
// bfloat16 raise in Python, as PyTorch's); every function computes in W (float or double).
// Sources: S. L. Moshier, Cephes Math Library 2.8 (j0.c, j1.c, k0.c, k1.c, airy.c): the
// rational and Chebyshev approximations PyTorch's aten/src/ATen/native/Math.h also uses, with
// their coefficients; I0 and I1 are elementwise.cl's bessel_i_w (torch.i0's series). DLMF
// 10.17 (Hankel's asymptotic expansion behind the x > 5 forms), 10.31 (K0, K1 near 0), 9.7
// (Airy's asymptotics), 10.49.3 (j0).
#include "elementwise.cl"

#ifdef IS_FLOAT
__constant W J0_PP[7] = {
    WC(+7.96936729297347051624e-04), WC(+8.28352392107440799803e-02),
    WC(+1.23953371646414299388e+00), WC(+5.44725003058768775090e+00),
    WC(+8.74716500199817011941e+00), WC(+5.30324038235394892183e+00),
    WC(+9.99999999999999997821e-01)};
__constant W J0_PQ[7] = {
    WC(+9.24408810558863637013e-04), WC(+8.56288474354474431428e-02),
    WC(+1.25352743901058953537e+00), WC(+5.47097740330417105182e+00),
    WC(+8.76190883237069594232e+00), WC(+5.30605288235394617618e+00),
    WC(+1.00000000000000000218e+00)};
__constant W J0_QP[8] = {
    WC(-1.13663838898469149931e-02), WC(-1.28252718670509318512e+00),
    WC(-1.95539544257735972385e+01), WC(-9.32060152123768231369e+01),
    WC(-1.77681167980488050595e+02), WC(-1.47077505154951170175e+02),
    WC(-5.14105326766599330220e+01), WC(-6.05014350600728481186e+00)};
__constant W J0_QQ[7] = {
    WC(+6.43178256118178023184e+01), WC(+8.56430025976980587198e+02),
    WC(+3.88240183605401609683e+03), WC(+7.24046774195652478189e+03),
    WC(+5.93072701187316984827e+03), WC(+2.06209331660327847417e+03),
    WC(+2.42005740240291393179e+02)};
__constant W J0_RP[4] = {
    WC(-4.79443220978201773821e+09), WC(+1.95617491946556577543e+12),
    WC(-2.49248344360967716204e+14), WC(+9.70862251047306323952e+15)};
__constant W J0_RQ[8] = {
    WC(+4.99563147152651017219e+02), WC(+1.73785401676374683123e+05),
    WC(+4.84409658339962045305e+07), WC(+1.11855537045356834862e+10),
    WC(+2.11277520115489217587e+12), WC(+3.10518229857422583814e+14),
    WC(+3.18121955943204943306e+16), WC(+1.71086294081043136091e+18)};
__constant W Y0_YP[8] = {
    WC(+1.55924367855235737965e+04), WC(-1.46639295903971606143e+07),
    WC(+5.43526477051876500413e+09), WC(-9.82136065717911466409e+11),
    WC(+8.75906394395366999549e+13), WC(-3.46628303384729719441e+15),
    WC(+4.42733268572569800351e+16), WC(-1.84950800436986690637e+16)};
__constant W Y0_YQ[7] = {
    WC(+1.04128353664259848412e+03), WC(+6.26107330137134956842e+05),
    WC(+2.68919633393814121987e+08), WC(+8.64002487103935000337e+10),
    WC(+2.02979612750105546709e+13), WC(+3.17157752842975028269e+15),
    WC(+2.50596256172653059228e+17)};
__constant W J1_PP[7] = {
    WC(+7.62125616208173112003e-04), WC(+7.31397056940917570436e-02),
    WC(+1.12719608129684925192e+00), WC(+5.11207951146807644818e+00),
    WC(+8.42404590141772420927e+00), WC(+5.21451598682361504063e+00),
    WC(+1.00000000000000000254e+00)};
__constant W J1_PQ[7] = {
    WC(+5.71323128072548699714e-04), WC(+6.88455908754495404082e-02),
    WC(+1.10514232634061696926e+00), WC(+5.07386386128601488557e+00),
    WC(+8.39985554327604159757e+00), WC(+5.20982848682361821619e+00),
    WC(+9.99999999999999997461e-01)};
__constant W J1_QP[8] = {
    WC(+5.10862594750176621635e-02), WC(+4.98213872951233449420e+00),
    WC(+7.58238284132545283818e+01), WC(+3.66779609360150777800e+02),
    WC(+7.10856304998926107277e+02), WC(+5.97489612400613639965e+02),
    WC(+2.11688757100572135698e+02), WC(+2.52070205858023719784e+01)};
__constant W J1_QQ[7] = {
    WC(+7.42373277035675149943e+01), WC(+1.05644886038262816351e+03),
    WC(+4.98641058337653607651e+03), WC(+9.56231892404756170795e+03),
    WC(+7.99704160447350683650e+03), WC(+2.82619278517639096600e+03),
    WC(+3.36093607810698293419e+02)};
__constant W J1_RP[4] = {
    WC(-8.99971225705559398224e+08), WC(+4.52228297998194034323e+11),
    WC(-7.27494245221818276015e+13), WC(+3.68295732863852883286e+15)};
__constant W J1_RQ[8] = {
    WC(+6.20836478118054335476e+02), WC(+2.56987256757748830383e+05),
    WC(+8.35146791431949253037e+07), WC(+2.21511595479792499675e+10),
    WC(+4.74914122079991414898e+12), WC(+7.84369607876235854894e+14),
    WC(+8.95222336184627338078e+16), WC(+5.32278620332680085395e+18)};
__constant W Y1_YP[6] = {
    WC(+1.26320474790178026440e+09), WC(-6.47355876379160291031e+11),
    WC(+1.14509511541823727583e+14), WC(-8.12770255501325109621e+15),
    WC(+2.02439475713594898196e+17), WC(-7.78877196265950026825e+17)};
__constant W Y1_YQ[8] = {
    WC(+5.94301592346128195359e+02), WC(+2.35564092943068577943e+05),
    WC(+7.34811944459721705660e+07), WC(+1.87601316108706159478e+10),
    WC(+3.88231277496238566008e+12), WC(+6.20557727146953693363e+14),
    WC(+6.87141087355300489866e+16), WC(+3.97270608116560655612e+18)};
__constant W K0_A[10] = {
    WC(+1.37446543561352307156e-16), WC(+4.25981614279661018399e-14),
    WC(+1.03496952576338420167e-11), WC(+1.90451637722020886025e-09),
    WC(+2.53479107902614945675e-07), WC(+2.28621210311945178607e-05),
    WC(+1.26461541144692592338e-03), WC(+3.59799365153615016266e-02),
    WC(+3.44289899924628486886e-01), WC(-5.35327393233902768720e-01)};
__constant W K0_B[25] = {
    WC(+5.30043377268626276149e-18), WC(-1.64758043015242134646e-17),
    WC(+5.21039150503902756861e-17), WC(-1.67823109680541210385e-16),
    WC(+5.51205597852431940784e-16), WC(-1.84859337734377901440e-15),
    WC(+6.34007647740507060557e-15), WC(-2.22751332699166985548e-14),
    WC(+8.03289077536357521100e-14), WC(-2.98009692317273043925e-13),
    WC(+1.14034058820847496303e-12), WC(-4.51459788337394416547e-12),
    WC(+1.85594911495471785253e-11), WC(-7.95748924447710747776e-11),
    WC(+3.57739728140030116597e-10), WC(-1.69753450938905987466e-09),
    WC(+8.57403401741422608519e-09), WC(-4.66048989768794782956e-08),
    WC(+2.76681363944501510342e-07), WC(-1.83175552271911948767e-06),
    WC(+1.39498137188764993662e-05), WC(-1.28495495816278026384e-04),
    WC(+1.56988388573005337491e-03), WC(-3.14481013119645005427e-02),
    WC(+2.44030308206595545468e+00)};
__constant W K1_A[11] = {
    WC(-7.02386347938628759343e-18), WC(-2.42744985051936593393e-15),
    WC(-6.66690169419932900609e-13), WC(-1.41148839263352776110e-10),
    WC(-2.21338763073472585583e-08), WC(-2.43340614156596823496e-06),
    WC(-1.73028895751305206302e-04), WC(-6.97572385963986435018e-03),
    WC(-1.22611180822657148235e-01), WC(-3.53155960776544875667e-01),
    WC(+1.52530022733894777053e+00)};
__constant W K1_B[25] = {
    WC(-5.75674448366501715755e-18), WC(+1.79405087314755922667e-17),
    WC(-5.68946255844285935196e-17), WC(+1.83809354436663880070e-16),
    WC(-6.05704724837331885336e-16), WC(+2.03870316562433424052e-15),
    WC(-7.01983709041831346144e-15), WC(+2.47715442448130437068e-14),
    WC(-8.97670518232499435011e-14), WC(+3.34841966607842919884e-13),
    WC(-1.28917396095102890680e-12), WC(+5.13963967348173025100e-12),
    WC(-2.12996783842756842877e-11), WC(+9.21831518760500529508e-11),
    WC(-4.19035475934189648750e-10), WC(+2.01504975519703286596e-09),
    WC(-1.03457624656780970260e-08), WC(+5.74108412545004946722e-08),
    WC(-3.50196060308781257119e-07), WC(+2.40648494783721712015e-06),
    WC(-1.93619797416608296024e-05), WC(+1.95215518471351631108e-04),
    WC(-2.85781685962277938680e-03), WC(+1.03923736576817238437e-01),
    WC(+2.72062619048444266945e+00)};
__constant W AI_AN[8] = {
    WC(+3.46538101525629032477e-01), WC(+1.20075952739645805542e+01),
    WC(+7.62796053615234516538e+01), WC(+1.68089224934630576269e+02),
    WC(+1.59756391350164413639e+02), WC(+7.05360906840444183113e+01),
    WC(+1.40264691163389668864e+01), WC(+9.99999999999999995305e-01)};
__constant W AI_AD[8] = {
    WC(+5.67594532638770212846e-01), WC(+1.47562562584847203173e+01),
    WC(+8.45138970141474626562e+01), WC(+1.77318088145400459522e+02),
    WC(+1.64234692871529701831e+02), WC(+7.14778400825575695274e+01),
    WC(+1.40959135607834029598e+01), WC(+1.00000000000000000470e+00)};
__constant W AI_AFN[9] = {
    WC(-1.31696323418331795333e-01), WC(-6.26456544431912369773e-01),
    WC(-6.93158036036933542233e-01), WC(-2.79779981545119124951e-01),
    WC(-4.91900132609500318020e-02), WC(-4.06265923594885404393e-03),
    WC(-1.59276496239262096340e-04), WC(-2.77649108155232920844e-06),
    WC(-1.67787698489114633780e-08)};
__constant W AI_AFD[9] = {
    WC(+1.33560420706553243746e+01), WC(+3.26825032795224613948e+01),
    WC(+2.67367040941499554804e+01), WC(+9.18707402907259625840e+00),
    WC(+1.47529146771666414581e+00), WC(+1.15687173795188044134e-01),
    WC(+4.40291641615211203805e-03), WC(+7.54720348287414296618e-05),
    WC(+4.51850092970580378464e-07)};
__constant W AI_AGN[11] = {
    WC(+1.97339932091685679179e-02), WC(+3.91103029615688277255e-01),
    WC(+1.06579897599595591108e+00), WC(+9.39169229816650230044e-01),
    WC(+3.51465656105547619242e-01), WC(+6.33888919628925490927e-02),
    WC(+5.85804113048388458567e-03), WC(+2.82851600836737019778e-04),
    WC(+6.98793669997260967291e-06), WC(+8.11789239554389293311e-08),
    WC(+3.41551784765923618484e-10)};
__constant W AI_AGD[10] = {
    WC(+9.30892908077441974853e+00), WC(+1.98352928718312140417e+01),
    WC(+1.55646628932864612953e+01), WC(+5.47686069422975497931e+00),
    WC(+9.54293611618961883998e-01), WC(+8.64580826352392193095e-02),
    WC(+4.12656523824222607191e-03), WC(+1.01259085116509135510e-04),
    WC(+1.17166733214413521882e-06), WC(+4.91834570062930015649e-09)};

// c[0] x^n + c[1] x^(n-1) + ... + c[n] (Horner)
inline W bes_poly(W x, __constant const W *c, int n) {
    W r = c[0];
    for (int i = 1; i <= n; ++i) r = r * x + c[i];
    return r;
}
// x^n + c[0] x^(n-1) + ... + c[n-1] (Cephes' p1evl: the leading coefficient 1 implied; PyTorch's
// port drops that term: its J0, J1, Y0, Y1 are off by up to 6e-6 relative near x = 5, its
// airy_ai by 2e-5 just below -2.09)
inline W bes_p1(W x, __constant const W *c, int n) {
    W r = x + c[0];
    for (int i = 1; i < n; ++i) r = r * x + c[i];
    return r;
}
// Cephes' chbevl: the Chebyshev series sum' c[i] T_(n-1-i)(x / 2), by Clenshaw's recurrence
inline W bes_cheb(W x, __constant const W *c, int n) {
    W b0 = c[0], b1 = WC(0.0), b2 = WC(0.0);
    for (int i = 1; i < n; ++i) { b2 = b1; b1 = b0; b0 = x * b1 - b2 + c[i]; }
    return WC(0.5) * (b0 - b2);
}
// J_n(x) (first = 1) or Y_n(x) (first = 0), n = 0 or 1, for x > 5: Hankel's form
// sqrt(2 / (pi x)) (P cos(x - phase) - (5 / x) Q sin(x - phase)) (Y: sin and cos swapped,
// + Q), P and Q rational functions of 25 / x^2 (Cephes j0.c, j1.c); NaN at +-inf (PyTorch's:
// cos(inf) is NaN)
inline W bes_hankel(W x, int n, int first) {
    W z = WC(25.0) / (x * x), ph = n ? WC(2.356194490192344928846982537459627163)
                                      : WC(0.785398163397448309615660845819875721);
    W p = n ? bes_poly(z, J1_PP, 6) / bes_poly(z, J1_PQ, 6)
            : bes_poly(z, J0_PP, 6) / bes_poly(z, J0_PQ, 6);
    W q = n ? bes_poly(z, J1_QP, 7) / bes_p1(z, J1_QQ, 7)
            : bes_poly(z, J0_QP, 7) / bes_p1(z, J0_QQ, 7);
    W s = sin(x - ph), c = cos(x - ph), f = WC(0.797884560802865355879892119868763737) / sqrt(x);
    q *= WC(5.0) / x;
    return (first ? p * c - q * s : p * s + q * c) * f;
}
inline W bessel_j0_w(W x) {
    x = fabs(x);
    if (x > WC(5.0)) return bes_hankel(x, 0, 1);
    if (x < WC(0.00001)) return WC(1.0) - x * x / WC(4.0);
    W z = x * x;  // (z - r1^2) (z - r2^2) R(z): the first two zeros kept exact
    return (z - WC(5.78318596294678452118e+00)) * (z - WC(3.04712623436620863991e+01)) *
           bes_poly(z, J0_RP, 3) / bes_p1(z, J0_RQ, 8);
}
inline W bessel_j1_w(W x) {
    W a = fabs(x), r;
    if (a > WC(5.0)) {
        r = bes_hankel(a, 1, 1);
    } else {
        W z = a * a;
        r = bes_poly(z, J1_RP, 3) / bes_p1(z, J1_RQ, 8) * a *
            (z - WC(1.46819706421238932572e+01)) * (z - WC(4.92184563216946036703e+01));
    }
    return x < WC(0.0) ? -r : r;
}
// Y0 and Y1: -inf at 0, NaN below (PyTorch's); near 0 R(x^2) + (2 / pi) log(x) J_n(x)
// (Y1: x R(x^2) + (2 / pi) (J1(x) log(x) - 1 / x))
inline W bessel_y0_w(W x) {
    if (x == WC(0.0)) return (W)(-INFINITY);
    if (!(x > WC(0.0))) return (W)NAN;
    if (x > WC(5.0)) return bes_hankel(x, 0, 0);
    W z = x * x;
    return bes_poly(z, Y0_YP, 7) / bes_p1(z, Y0_YQ, 7) +
           WC(0.636619772367581343075535053490057448) * log(x) * bessel_j0_w(x);
}
inline W bessel_y1_w(W x) {
    if (x == WC(0.0)) return (W)(-INFINITY);
    if (!(x > WC(0.0))) return (W)NAN;
    if (x > WC(5.0)) return bes_hankel(x, 1, 0);
    W z = x * x;
    return x * (bes_poly(z, Y1_YP, 5) / bes_p1(z, Y1_YQ, 8)) +
           WC(0.636619772367581343075535053490057448) * (bessel_j1_w(x) * log(x) - WC(1.0) / x);
}
// K0 and K1 (Cephes k0.c, k1.c), e^x K_n(x) when scaled: inf at 0, NaN below; up to 2
// Chebyshev series in x^2 - 2 with the log(x / 2) I_n(x) term; above, e^-x / sqrt(x) times a
// Chebyshev series in 8 / x - 2 (scaled: without e^-x, finite for every x > 0)
inline W bessel_k_w(W x, int n, int scaled) {
    if (x == WC(0.0)) return (W)INFINITY;
    if (!(x > WC(0.0))) return (W)NAN;
    if (x <= WC(2.0)) {
        W z = x * x - WC(2.0), r;
        if (n) r = log(WC(0.5) * x) * bessel_i_w(x, 1, 0) + bes_cheb(z, K1_A, 11) / x;
        else r = bes_cheb(z, K0_A, 10) - log(WC(0.5) * x) * bessel_i_w(x, 0, 0);
        return scaled ? r * exp(x) : r;
    }
    if (isinf(x)) return WC(0.0);
    W r = (n ? bes_cheb(WC(8.0) / x - WC(2.0), K1_B, 25)
             : bes_cheb(WC(8.0) / x - WC(2.0), K0_B, 25)) / sqrt(x);
    return scaled ? r : r * exp(-x);
}
// The spherical Bessel function j0(x) = sin(x) / x (DLMF 10.49.3): its Taylor series to x^12
// below 0.5, 0 at +-inf; j1(x) = sin(x) / x^2 - cos(x) / x (j0' = -j1, for the gradient):
// its Taylor series below 0.5, where the closed form cancels
inline W spherical_j0_w(W x) {
    if (isinf(x)) return WC(0.0);
    W z = x * x;
    if (fabs(x) < WC(0.5))
        return WC(1.0) + z * (WC(-1.0) / WC(6.0) + z * (WC(1.0) / WC(120.0) + z * (
               WC(-1.0) / WC(5040.0) + z * (WC(1.0) / WC(362880.0) + z * (
               WC(-1.0) / WC(39916800.0) + z * (WC(1.0) / WC(6227020800.0)))))));
    return sin(x) / x;
}
inline W spherical_j1_w(W x) {
    if (isinf(x)) return WC(0.0);
    W z = x * x;
    if (fabs(x) < WC(0.5))  // sum_m (-1)^(m+1) 2m x^(2m-1) / (2m+1)!, to x^15
        return x * (WC(1.0) / WC(3.0) + z * (WC(-1.0) / WC(30.0) + z * (WC(1.0) / WC(840.0) +
               z * (WC(-1.0) / WC(45360.0) + z * (WC(1.0) / WC(3991680.0) + z * (
               WC(-1.0) / WC(518918400.0) + z * (WC(1.0) / WC(93405312000.0) + z * (
               WC(-1.0) / WC(22230464256000.0)))))))));
    return (sin(x) / x - cos(x)) / x;
}
// The Airy function Ai(x) (Cephes airy.c, PyTorch's airy_ai): below -2.09 the oscillating
// asymptotic form (DLMF 9.7.9) with rational corrections in 1 / zeta^2, zeta = (2/3) |x|^1.5;
// from 2.09 on e^-zeta / (2 sqrt(pi) x^(1/4)) times a rational function of 1 / zeta (9.7.5);
// between them the Maclaurin series c1 f(x) - c2 g(x) (9.4.1). 0 above 103.892 (underflow),
// NaN at +-inf (PyTorch's).
inline W airy_ai_w(W x) {
    if (isinf(x)) return (W)NAN;
    if (x > WC(103.892)) return WC(0.0);
    if (x < WC(-2.09)) {
        W zeta = WC(-2.0) * x * sqrt(-x) / WC(3.0), z = WC(1.0) / zeta, zz = z * z;
        W f = bes_poly(zz, AI_AFN, 8) / bes_p1(zz, AI_AFD, 9);
        W g = bes_poly(zz, AI_AGN, 10) / bes_p1(zz, AI_AGD, 10);
        W t = zeta + WC(0.25) * W_PI;
        return WC(5.64189583547756286948e-01) / sqrt(sqrt(-x)) *
               (sin(t) * (WC(1.0) + zz * f) - cos(t) * (z * g));
    }
    if (x >= WC(2.09)) {
        W zeta = WC(2.0) * x * sqrt(x) / WC(3.0), z = WC(1.0) / zeta;
        return WC(5.64189583547756286948e-01) * (bes_poly(z, AI_AN, 7) / bes_poly(z, AI_AD, 7)) /
               (WC(2.0) * sqrt(sqrt(x)) * exp(zeta));
    }
    W f = WC(1.0), g = x, k = WC(1.0), m = WC(1.0), n = x, t = WC(1.0), z = x * x * x;
    while (t > W_EPS) {
        m *= z; k += WC(1.0); m /= k;
        n *= z; k += WC(1.0); n /= k;
        m /= k; f += m;
        k += WC(1.0); n /= k; g += n;
        t = fabs(m / f);
    }
    return WC(0.355028053887817239260) * f - WC(0.258819403792806798405) * g;
}
UNARY(bessel_j0_op, (T)bessel_j0_w((W)x))
UNARY(bessel_j1_op, (T)bessel_j1_w((W)x))
UNARY(bessel_y0_op, (T)bessel_y0_w((W)x))
UNARY(bessel_y1_op, (T)bessel_y1_w((W)x))
UNARY(modified_bessel_k0_op, (T)bessel_k_w((W)x, 0, 0))
UNARY(modified_bessel_k1_op, (T)bessel_k_w((W)x, 1, 0))
UNARY(scaled_modified_bessel_k0_op, (T)bessel_k_w((W)x, 0, 1))
UNARY(scaled_modified_bessel_k1_op, (T)bessel_k_w((W)x, 1, 1))
UNARY(spherical_bessel_j0_op, (T)spherical_j0_w((W)x))
UNARY(spherical_bessel_j1_op, (T)spherical_j1_w((W)x))
UNARY(airy_ai_op, (T)airy_ai_w((W)x))
#endif
