# PyTorch's tutorial "Writing Custom Datasets, DataLoaders and Transforms" (data_loading):
# FaceLandmarksDataset(Dataset) reading a csv of file names and landmark coordinates, with
# torch.is_tensor(idx) -> idx.tolist() and samples as dicts {'image', 'landmarks'};
# callable transforms Rescale, RandomCrop (np.random.randint) and ToTensor (HWC -> CHW,
# torch.from_numpy), composed; DataLoader(batch_size=4, shuffle=True, num_workers=0 and 2)
# collating dicts; a custom collate_fn for variable-sized images, a sampler
# (SubsetRandomSampler / WeightedRandomSampler), drop_last, random_split and Subset.
# pandas, skimage.io and torchvision.transforms are replaced by csv, np.load and a small
# Compose; the faces are synthetic .npy images written to a folder.
from __future__ import print_function, division

import csv
import os

import numpy as np
import torch
from torch.utils.data import Dataset, DataLoader
from torch.utils.data import SubsetRandomSampler, WeightedRandomSampler, random_split


def write_faces(root_dir, n=10, seed=0):
    """n images of varying sizes with 3 landmarks each, and their csv."""
    rng = np.random.RandomState(seed)
    os.makedirs(root_dir, exist_ok=True)
    with open(os.path.join(root_dir, 'face_landmarks.csv'), 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(['image_name'] + [f'part_{i}_{c}' for i in range(3) for c in 'xy'])
        for k in range(n):
            h, wd = 20 + 2 * k, 24 + k
            image = (rng.rand(h, wd, 3) * 255).astype(np.uint8)
            name = f'face_{k}.npy'
            np.save(os.path.join(root_dir, name), image)
            pts = np.stack([rng.randint(0, wd, 3), rng.randint(0, h, 3)], 1)
            w.writerow([name] + [int(v) for v in pts.reshape(-1)])


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[1:]


class FaceLandmarksDataset(Dataset):
    """Face Landmarks dataset."""

    def __init__(self, csv_file, root_dir, transform=None):
        """
        Arguments:
            csv_file (string): Path to the csv file with annotations.
            root_dir (string): Directory with all the images.
            transform (callable, optional): Optional transform to be applied
                on a sample.
        """
        self.landmarks_frame = read_csv(csv_file)
        self.root_dir = root_dir
        self.transform = transform

    def __len__(self):
        return len(self.landmarks_frame)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()

        img_name = os.path.join(self.root_dir,
                                self.landmarks_frame[idx][0])
        image = np.load(img_name)
        landmarks = self.landmarks_frame[idx][1:]
        landmarks = np.array([landmarks], dtype=float).reshape(-1, 2)
        sample = {'image': image, 'landmarks': landmarks}

        if self.transform:
            sample = self.transform(sample)

        return sample


class Rescale(object):
    """Rescale the image in a sample to a given size.

    Args:
        output_size (tuple or int): Desired output size. If tuple, output is
            matched to output_size. If int, smaller of image edges is matched
            to output_size keeping aspect ratio the same.
    """

    def __init__(self, output_size):
        assert isinstance(output_size, (int, tuple))
        self.output_size = output_size

    def __call__(self, sample):
        image, landmarks = sample['image'], sample['landmarks']

        h, w = image.shape[:2]
        if isinstance(self.output_size, int):
            if h > w:
                new_h, new_w = self.output_size * h / w, self.output_size
            else:
                new_h, new_w = self.output_size, self.output_size * w / h
        else:
            new_h, new_w = self.output_size

        new_h, new_w = int(new_h), int(new_w)

        # nearest-neighbour instead of skimage's transform.resize
        rows = (np.arange(new_h) * h // new_h)
        cols = (np.arange(new_w) * w // new_w)
        img = image[rows][:, cols]

        # h and w are swapped for landmarks because for images,
        # x and y axes are axis 1 and 0 respectively
        landmarks = landmarks * [new_w / w, new_h / h]

        return {'image': img, 'landmarks': landmarks}


class RandomCrop(object):
    """Crop randomly the image in a sample.

    Args:
        output_size (tuple or int): Desired output size. If int, square crop
            is made.
    """

    def __init__(self, output_size):
        assert isinstance(output_size, (int, tuple))
        if isinstance(output_size, int):
            self.output_size = (output_size, output_size)
        else:
            assert len(output_size) == 2
            self.output_size = output_size

    def __call__(self, sample):
        image, landmarks = sample['image'], sample['landmarks']

        h, w = image.shape[:2]
        new_h, new_w = self.output_size

        top = np.random.randint(0, h - new_h + 1)
        left = np.random.randint(0, w - new_w + 1)

        image = image[top: top + new_h,
                      left: left + new_w]

        landmarks = landmarks - [left, top]

        return {'image': image, 'landmarks': landmarks}


class ToTensor(object):
    """Convert ndarrays in sample to Tensors."""

    def __call__(self, sample):
        image, landmarks = sample['image'], sample['landmarks']

        # swap color axis because
        # numpy image: H x W x C
        # torch image: C x H x W
        image = image.transpose((2, 0, 1))
        return {'image': torch.from_numpy(image),
                'landmarks': torch.from_numpy(landmarks)}


class Compose(object):
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, sample):
        for t in self.transforms:
            sample = t(sample)
        return sample


def collate_variable(batch):
    """A custom collate_fn: images of different sizes stay a list, landmarks are padded."""
    images = [torch.from_numpy(s['image'].transpose((2, 0, 1)).copy()) for s in batch]
    lms = torch.stack([torch.from_numpy(s['landmarks']) for s in batch])
    return images, lms


def main(root_dir='faces', num_workers=(0, 2)):
    np.random.seed(0)
    torch.manual_seed(0)
    write_faces(root_dir)
    csv_file = os.path.join(root_dir, 'face_landmarks.csv')

    face_dataset = FaceLandmarksDataset(csv_file=csv_file, root_dir=root_dir)
    shapes = []
    for i, sample in enumerate(face_dataset):
        print(i, sample['image'].shape, sample['landmarks'].shape)
        shapes.append(sample['image'].shape)
        if i == 3:
            break

    scale = Rescale(16)
    crop = RandomCrop(12)
    composed = Compose([Rescale(16), RandomCrop(12)])
    sample = face_dataset[torch.tensor(5)]
    for tsfrm in [scale, crop, composed]:
        transformed_sample = tsfrm(sample)
        print(type(tsfrm).__name__, transformed_sample['image'].shape)

    transformed_dataset = FaceLandmarksDataset(csv_file=csv_file, root_dir=root_dir,
                                               transform=Compose([
                                                   Rescale(16),
                                                   RandomCrop(12),
                                                   ToTensor()
                                               ]))
    for i, sample in enumerate(transformed_dataset):
        print(i, sample['image'].size(), sample['landmarks'].size())
        if i == 3:
            break

    batches = {}
    for workers in num_workers:
        dataloader = DataLoader(transformed_dataset, batch_size=4,
                                shuffle=True, num_workers=workers)
        sizes = []
        for i_batch, sample_batched in enumerate(dataloader):
            print(i_batch, sample_batched['image'].size(),
                  sample_batched['landmarks'].size())
            sizes.append((tuple(sample_batched['image'].size()),
                          tuple(sample_batched['landmarks'].size()),
                          sample_batched['image'].dtype, sample_batched['landmarks'].dtype))
        batches[workers] = sizes

    # drop_last, a sampler over a subset, a weighted sampler, a custom collate_fn
    fixed = FaceLandmarksDataset(csv_file=csv_file, root_dir=root_dir,
                                 transform=Compose([Rescale((16, 16)), ToTensor()]))
    loader = DataLoader(fixed, batch_size=3, drop_last=True)
    n_drop = len(loader), sum(1 for _ in loader)
    sub = DataLoader(fixed, batch_size=2,
                     sampler=SubsetRandomSampler([0, 2, 4, 6]))
    sub_seen = sorted(float(v) for b in sub for v in b['landmarks'][:, 0, 0])
    weights = [0.0] * 5 + [1.0] * 5
    weighted = DataLoader(fixed, batch_size=5,
                          sampler=WeightedRandomSampler(weights, num_samples=10,
                                                        replacement=True))
    weighted_batches = [b['landmarks'] for b in weighted]
    raw = DataLoader(face_dataset, batch_size=4, collate_fn=collate_variable)
    variable = [([tuple(im.shape) for im in images], tuple(lms.shape)) for images, lms in raw]
    train_set, val_set = random_split(face_dataset, [7, 3],
                                      generator=torch.Generator().manual_seed(42))
    split = (len(train_set), len(val_set), sorted(train_set.indices + val_set.indices))
    return dict(shapes=shapes, batches=batches, n_drop=n_drop, sub_seen=sub_seen,
                weighted=weighted_batches, variable=variable, split=split,
                dataset=face_dataset, transformed=transformed_dataset, fixed=fixed)


if __name__ == '__main__':
    main()
