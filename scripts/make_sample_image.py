"""Write the vision page's sample image, ``assets/sample.png``, from the engine's generator.

Run once at development time; the PNG is committed and a test checks that it still
equals :func:`engine.vision.sample_image` pixel for pixel. Usage:
``python scripts/make_sample_image.py``.
"""

from PIL import Image

from engine.resources import ASSETS
from engine.vision import sample_image

SIZE = 224
SEED = 0


def main():
    path = ASSETS / "sample.png"
    Image.fromarray(sample_image(SIZE, SEED)).save(path, optimize=True)
    print(f"{SIZE}×{SIZE} sample image -> {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
